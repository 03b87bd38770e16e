"""ASGI entry point: HTTP through Django (and /mcp through the MCP server), WebSockets through
the workflow consumer."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "poweron.settings")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402  (needs the app registry)
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from poweron.bodylimit import BodyLimitMiddleware, install_daphne_guard  # noqa: E402
from workflows.execution import durable, launcher  # noqa: E402
from workflows.live.origin import OriginValidator  # noqa: E402
from workflows.live.routing import websocket_urlpatterns  # noqa: E402
from workflows.mcp_server import endpoint as mcp_endpoint  # noqa: E402

application = ProtocolTypeRouter(
    {
        # /mcp: the MCP server (streamable HTTP); everything else: Django.
        "http": mcp_endpoint.mount(BodyLimitMiddleware(django_asgi_app)),
        # Only pages of the app's own origin (scheme, host and port) or CSRF_TRUSTED_ORIGINS.
        # URLRouter's stubs want their own pattern type, which path() (typed for views) is not.
        "websocket": OriginValidator(
            AuthMiddlewareStack(URLRouter(websocket_urlpatterns))  # type: ignore[arg-type]
        ),
    }
)

# Under Daphne, a too large body is refused before Twisted spools it (bodylimit.py).
install_daphne_guard()
# Under Daphne, DBOS starts inside its loop: runs a crash cut off resume in this process.
durable.launch_with_daphne(watch=launcher.watch_runs)
