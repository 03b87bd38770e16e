"""PowerOn settings, read from the environment. Every variable is listed in the README."""

from __future__ import annotations

import os
import secrets
from datetime import timedelta
from pathlib import Path

import dj_database_url
import django_stubs_ext

from poweron.env import env_bool, env_float, env_int, env_list

# The generic classes of Django that the code subscripts as its types say (ModelAdmin[Model],
# ModelForm[Model], a field's value types) accept a subscript at run time too.
django_stubs_ext.monkeypatch(include_builtins=False)

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("POWERON_VAR_DIR", BASE_DIR / "var"))


def proxy_ssl_header(value: str) -> tuple[str, str] | None:
    """`X-Forwarded-Proto` (or `X-Forwarded-Proto: https`): the header by which the proxy
    says the browser used https, as Django's SECURE_PROXY_SSL_HEADER wants it."""
    name, _, expected = value.partition(":")
    if not name.strip():
        return None
    return "HTTP_" + name.strip().upper().replace("-", "_"), expected.strip() or "https"


def development_secret_key() -> str:
    """Generate a secret key once into an ignored local file, so sessions survive restarts."""
    path = VAR_DIR / ".secret_key"
    if path.exists():
        return path.read_text().strip()
    path.parent.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(50)
    path.write_text(key)
    path.chmod(0o600)
    return key


DEBUG = env_bool("DEBUG", False)
# Error pages and reports without secrets, with DEBUG on too (poweron/debug.py).
DEFAULT_EXCEPTION_REPORTER_FILTER = "poweron.debug.SecretSafeFilter"
DEFAULT_EXCEPTION_REPORTER = "poweron.debug.SecretSafeReporter"
SECRET_KEY = os.environ.get("SECRET_KEY") or development_secret_key()
# Earlier keys, still accepted for sessions and for opening sealed connection secrets.
SECRET_KEY_FALLBACKS = env_list("SECRET_KEY_FALLBACKS", "")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost")
# Origins (scheme://host[:port]) trusted besides the app's own, for forms and for sockets.
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")

# HTTPS in production (README, "Running in production"); all off for `make run` on plain http.
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0, low=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", False)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", False)
SECURE_PROXY_SSL_HEADER = proxy_ssl_header(os.environ.get("SECURE_PROXY_SSL_HEADER", ""))

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "channels",
    "workflows",
    "workflows.agui",
    "axes",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "poweron.headers.SecurityHeadersMiddleware",  # Content-Security-Policy, Permissions-Policy
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes asks: turns a locked-out sign-in into its refusal page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "poweron.urls"
ASGI_APPLICATION = "poweron.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "workflows.context_processors.model_status",
            ],
        },
    },
]

# Keep connections: the runner stores every event through database_sync_to_async, and a
# new connection per event was most of the cost of storing it (bench/host_overhead.py).
DATABASES = {
    "default": dj_database_url.config(
        default=f"sqlite:///{VAR_DIR / 'db.sqlite3'}",
        conn_max_age=env_int("POWERON_DB_CONN_MAX_AGE", 600, low=0),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL and a busy timeout so several live workflows do not hit "database is locked".
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
    }

REDIS_URL = os.environ.get("REDIS_URL", "")
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {
                "hosts": [REDIS_URL],
                "capacity": env_int("POWERON_CHANNEL_CAPACITY", 1000, low=1),
                "expiry": env_int("POWERON_CHANNEL_EXPIRY", 30, low=1),
            },
        }
    }
else:
    CHANNEL_LAYERS = {  # one process only: runs, sockets and workers must share it
        "default": {
            "BACKEND": "channels.layers.InMemoryChannelLayer",
            "CONFIG": {
                "capacity": env_int("POWERON_CHANNEL_CAPACITY", 1000, low=1),
                "expiry": env_int("POWERON_CHANNEL_EXPIRY", 30, low=1),
            },
        }
    }

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "workflows:home"
LOGOUT_REDIRECT_URL = "login"
# Login throttling (django-axes, its records in the database, so every process sees them):
# after this many failed sign-ins for one username from one address, signing in is refused
# for the cool-off, even with the right password. 0 turns it off.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int("POWERON_LOGIN_FAILURE_LIMIT", 5, low=0)
AXES_ENABLED = AXES_FAILURE_LIMIT > 0
AXES_COOLOFF_TIME = timedelta(seconds=env_int("POWERON_LOGIN_COOLOFF_SECONDS", 900, low=1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "poweron.lockout.login_refused"
AXES_VERBOSE = False

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # whitenoise expects it before collectstatic
# Serve straight from static/ too, so a checkout works before (or without) collectstatic.
WHITENOISE_USE_FINDERS = True
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
MEDIA_ROOT = Path(os.environ.get("MEDIA_ROOT", VAR_DIR / "media"))
MEDIA_URL = "media/"
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
POWERON_MAX_UPLOAD_BYTES = env_int("POWERON_MAX_UPLOAD_BYTES", 20 * 1024 * 1024, low=1)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# The model: any OpenAI-compatible server. Without one, the offline demo model runs.
POWERON_LLM_BASE_URL = os.environ.get("POWERON_LLM_BASE_URL", "")
POWERON_LLM_API_KEY = os.environ.get("POWERON_LLM_API_KEY") or os.environ.get("OPENAI_API_KEY", "")
POWERON_LLM_MODEL = os.environ.get("POWERON_LLM_MODEL", "gpt-4o-mini")
POWERON_LLM_TIMEOUT = env_float("POWERON_LLM_TIMEOUT", 60, low=1)
# Seconds added to the timeout per 1,000 tokens of prompt and answer limit: for slow local
# servers (a small model on a CPU reads about 50 tokens/s), 0 for hosted ones.
POWERON_LLM_TIMEOUT_PER_1K = env_float("POWERON_LLM_TIMEOUT_PER_1K", 0.0, low=0)
# A model reply's text is cut at this many bytes, whatever the server does with max_tokens
# (a body read whole may be 8 times this before it is refused). 512 KiB: about 130k tokens.
POWERON_LLM_MAX_REPLY_BYTES = env_int("POWERON_LLM_MAX_REPLY_BYTES", 512 * 1024, low=1024)
# How far each call's JSON schema follows the live state: narrow (it also lists the documents
# that exist: best for small local models), stable (the same schema across a task's calls, so a
# provider's prompt cache holds), shared (no schema: one prompt head for every kind of call,
# compact answers, the answer after the JSON), or auto: narrow for a server on this machine or
# a private network, shared for a hosted provider.
POWERON_LLM_SCHEMAS = os.environ.get("POWERON_LLM_SCHEMAS", "auto").strip().lower()
# Prefix reuse on a local llama.cpp server: the slots its calls are spread over by kind (each
# family of calls keeps its prefix in its own slot), as a count, "off", or auto: asked from a
# server on this machine or a private network (llama.cpp's /props), never from a hosted one.
POWERON_LLM_SLOTS = os.environ.get("POWERON_LLM_SLOTS", "auto").strip().lower()
# A small model for the small jobs (Stage 2's parameters, the review), on its own server and
# key if they are set (else the main model's); empty: every call goes to the main model.
POWERON_LLM_MODEL_SMALL = os.environ.get("POWERON_LLM_MODEL_SMALL", "").strip()
POWERON_LLM_BASE_URL_SMALL = os.environ.get("POWERON_LLM_BASE_URL_SMALL", "").strip()
POWERON_LLM_API_KEY_SMALL = os.environ.get("POWERON_LLM_API_KEY_SMALL", "")
# How long the demo model takes per call, typically (ms): it paces itself like a model.
POWERON_DEMO_DELAY_MS = env_int("POWERON_DEMO_DELAY_MS", 500, low=0)
POWERON_MAX_STEPS = env_int("POWERON_MAX_STEPS", 5, low=1, high=50)
POWERON_TOKEN_BUDGET = env_int("POWERON_TOKEN_BUDGET", 200_000, low=0)  # per round
POWERON_DAILY_TOKEN_BUDGET = env_int("POWERON_DAILY_TOKEN_BUDGET", 0, low=0)  # per workflow, 24 h
POWERON_TIME_BUDGET = env_int("POWERON_TIME_BUDGET", 600, low=0)
# Prices per million tokens for a model genai-prices does not know, or to replace its price
# (a self-hosted model); input and output both set turn them on. Cached input defaults to
# the input price. POWERON_DAILY_COST_BUDGET is in the same currency (0: off).
POWERON_PRICE_INPUT = env_float("POWERON_PRICE_INPUT", None, low=0)
POWERON_PRICE_CACHED_INPUT = env_float("POWERON_PRICE_CACHED_INPUT", None, low=0)
POWERON_PRICE_OUTPUT = env_float("POWERON_PRICE_OUTPUT", None, low=0)
POWERON_PRICE_CURRENCY = os.environ.get("POWERON_PRICE_CURRENCY", "").strip().upper() or "USD"
# The small model's own prices, in the same currency (else genai-prices' table).
POWERON_PRICE_INPUT_SMALL = env_float("POWERON_PRICE_INPUT_SMALL", None, low=0)
POWERON_PRICE_CACHED_INPUT_SMALL = env_float("POWERON_PRICE_CACHED_INPUT_SMALL", None, low=0)
POWERON_PRICE_OUTPUT_SMALL = env_float("POWERON_PRICE_OUTPUT_SMALL", None, low=0)
POWERON_DAILY_COST_BUDGET = env_float("POWERON_DAILY_COST_BUDGET", 0, low=0)
# Where runs execute: "inline" in the web process that received the message, or "worker"
# in `manage.py run_workers` processes (needs REDIS_URL, so the processes share a layer).
POWERON_RUNNER = os.environ.get("POWERON_RUNNER", "inline").strip().lower()
if POWERON_RUNNER not in {"inline", "worker"}:
    raise ValueError(f"POWERON_RUNNER must be inline or worker, got {POWERON_RUNNER!r}")
if POWERON_RUNNER == "worker" and not REDIS_URL:
    raise ValueError("POWERON_RUNNER=worker needs REDIS_URL: workers and web share Redis")
POWERON_WORKER_CONCURRENCY = env_int("POWERON_WORKER_CONCURRENCY", 8, low=1)
# Durable runs (DBOS): the release whose runs this process resumes, this process's stable
# name among the processes that run rounds, where the checkpoints live (default: SQLite under
# POWERON_VAR_DIR, or the PostgreSQL app database in schema "dbos"), and failover.
POWERON_APP_VERSION = os.environ.get("POWERON_APP_VERSION", "0.3.0")
POWERON_EXECUTOR_ID = os.environ.get("POWERON_EXECUTOR_ID", "local")
POWERON_DBOS_DATABASE_URL = os.environ.get("POWERON_DBOS_DATABASE_URL", "")
POWERON_FAILOVER_SECONDS = env_float("POWERON_FAILOVER_SECONDS", 60.0, low=1)
POWERON_QUEUE_POLL_SECONDS = env_float("POWERON_QUEUE_POLL_SECONDS", 1.0, low=0.01)
POWERON_MAX_RUNS_PER_USER = env_int("POWERON_MAX_RUNS_PER_USER", 4, low=0)
# Rates per user over the last hour, counted from the database (so across processes): files
# uploaded, and messages that start a round. 0: no limit.
POWERON_MAX_UPLOADS_PER_HOUR = env_int("POWERON_MAX_UPLOADS_PER_HOUR", 100, low=0)
POWERON_MAX_ROUNDS_PER_HOUR = env_int("POWERON_MAX_ROUNDS_PER_HOUR", 60, low=0)
# Commands that store or send an event (feedback, steering notes, renames, answers) one user
# may give in any minute, from every page, socket and program together. 0: no limit.
POWERON_COMMANDS_PER_MINUTE = env_int("POWERON_COMMANDS_PER_MINUTE", 30, low=0)
# A viewer that heard nothing for this long asks the database for events the layer dropped.
POWERON_CATCH_UP_SECONDS = env_float("POWERON_CATCH_UP_SECONDS", 3.0, low=0.05)
# Stored events a socket is replayed at once; the client asks for each next page (0: all).
POWERON_REPLAY_PAGE = env_int("POWERON_REPLAY_PAGE", 500, low=0)

# Documents are parsed in a child process with these limits (per document).
POWERON_DOCUMENT_PARSE_TIMEOUT = env_float("POWERON_DOCUMENT_PARSE_TIMEOUT", 30.0, low=1)
POWERON_DOCUMENT_PARSE_MEMORY_MB = env_int("POWERON_DOCUMENT_PARSE_MEMORY_MB", 512, low=64)
POWERON_DOCUMENT_MAX_XML_ELEMENTS = env_int("POWERON_DOCUMENT_MAX_XML_ELEMENTS", 1_000_000, low=1)

# Tools: search providers and the safe fetcher.
POWERON_SEARCH_PROVIDER = os.environ.get("POWERON_SEARCH_PROVIDER", "")
POWERON_TAVILY_API_KEY = os.environ.get("POWERON_TAVILY_API_KEY", "")
POWERON_TAVILY_URL = os.environ.get("POWERON_TAVILY_URL", "https://api.tavily.com")
POWERON_SEARXNG_URL = os.environ.get("POWERON_SEARXNG_URL", "")
POWERON_FETCH_ALLOW_HOSTS = [h.lower() for h in env_list("POWERON_FETCH_ALLOW_HOSTS", "")]
POWERON_FETCH_MAX_BYTES = env_int("POWERON_FETCH_MAX_BYTES", 5 * 1024 * 1024, low=1)
POWERON_FETCH_TIMEOUT = env_int("POWERON_FETCH_TIMEOUT", 10, low=1)
POWERON_SCRAPE_MAX_PAGES = env_int("POWERON_SCRAPE_MAX_PAGES", 5, low=1, high=20)
POWERON_CRAWL_MAX_PAGES = env_int("POWERON_CRAWL_MAX_PAGES", 10, low=1, high=100)
POWERON_CRAWL_MAX_DEPTH = env_int("POWERON_CRAWL_MAX_DEPTH", 2, low=0, high=5)
POWERON_WEB_ENRICHMENT = env_bool("POWERON_WEB_ENRICHMENT", True)
POWERON_APPROVAL_METHODS = env_list("POWERON_APPROVAL_METHODS", "")
# Actions that would send data to a host the request does not name wait for approval too.
POWERON_OFFSITE_APPROVAL = env_bool("POWERON_OFFSITE_APPROVAL", True)
# MCP servers whose tools join the catalog: JSON (name -> {command | url, headers, env, tools,
# approval, timeout, max_output_chars}) or "@/path/to/servers.json". See the README's Tools.
POWERON_MCP_SERVERS = os.environ.get("POWERON_MCP_SERVERS", "")
# What one MCP tool call may bring back: its files together (each as large as an upload may
# be), and how many files (its text and structured content come on top).
POWERON_MCP_MAX_RESULT_BYTES = env_int("POWERON_MCP_MAX_RESULT_BYTES", 20 * 1024 * 1024, low=1024)
POWERON_MCP_MAX_DOCUMENTS = env_int("POWERON_MCP_MAX_DOCUMENTS", 10, low=1, high=100)

LOG_LEVEL = os.environ.get("LOG_LEVEL", "INFO").strip().upper()
if LOG_LEVEL not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
    levels = "DEBUG, INFO, WARNING, ERROR or CRITICAL"
    raise ValueError(f"LOG_LEVEL must be {levels}, got {LOG_LEVEL!r}")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        # When, how bad and where from, on every line (DBOS's lines say it their own way).
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
    },
    "filters": {
        # A request for a host not in ALLOWED_HOSTS (scanners send many) is one line, not
        # a traceback.
        "no_traceback": {"()": "poweron.logs.WithoutTraceback"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "plain"},
        "one_line": {
            "class": "logging.StreamHandler",
            "formatter": "plain",
            "filters": ["no_traceback"],
        },
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        "django.channels.server": {"level": "WARNING"},
        "axes": {"level": "WARNING"},  # lockouts only, not every sign-in
        "django.security.DisallowedHost": {
            "handlers": ["one_line"],
            "level": "WARNING",
            "propagate": False,
        },
    },
}

# --- The HTTP API (workflows/api/) ---------------------------------------------------------
# Requests one personal API token may make per minute (a fixed minute window, counted in the
# database so every process sees the same count), on top of the per-user limits. 0: no limit.
POWERON_API_REQUESTS_PER_MINUTE = env_int("POWERON_API_REQUESTS_PER_MINUTE", 120, low=0)
# A live event stream (`…/events/stream`, `/v1/chat/completions` with stream) that sent
# nothing for this long sends an SSE comment, so proxies keep it open; its token or session
# is checked again as often.
POWERON_SSE_HEARTBEAT_SECONDS = env_float("POWERON_SSE_HEARTBEAT_SECONDS", 15.0, low=0.05)
