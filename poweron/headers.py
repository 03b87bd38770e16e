"""Security headers Django does not set itself: Content-Security-Policy and Permissions-Policy.

The policy is strict: scripts, styles, images, fonts and sockets from the app's own origin
only, no inline script, style attribute or event handler, no eval. Templates keep their
behaviour in static/js and their looks in static/css; HTMX runs with eval and script tags
off (the htmx-config meta in base.html). Referrer-Policy, nosniff and X-Frame-Options come
from Django's SecurityMiddleware and XFrameOptionsMiddleware.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponseBase
from django.utils.deprecation import MiddlewareMixin

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",  # Pico's and admin's icons are data: SVGs
        "font-src 'self'",
        "connect-src 'self'",  # 'self' covers the page's own ws:// and wss:// origin
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)
PERMISSIONS_POLICY = ", ".join(
    f"{feature}=()"
    for feature in [
        "accelerometer",
        "camera",
        "display-capture",
        "geolocation",
        "gyroscope",
        "magnetometer",
        "microphone",
        "midi",
        "payment",
        "usb",
    ]
)


class SecurityHeadersMiddleware(MiddlewareMixin):
    """Adds the Content-Security-Policy and Permissions-Policy to every response (sync and
    async alike, so it costs ASGI requests no thread hop)."""

    def process_response(
        self, request: HttpRequest, response: HttpResponseBase
    ) -> HttpResponseBase:
        # Django's debug error pages (DEBUG only) are styled and scripted inline.
        if not (settings.DEBUG and response.status_code >= 400):
            response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        response.headers.setdefault("Permissions-Policy", PERMISSIONS_POLICY)
        return response
