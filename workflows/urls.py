from django.urls import path, re_path

from . import views
from .api import pages as api_pages

app_name = "workflows"

urlpatterns = [
    path("", views.home, name="home"),
    path("connections/", views.connection_list, name="connections"),
    path(
        "connections/<int:connection_id>/edit/",
        views.connection_edit,
        name="connection-edit",
    ),
    path(
        "connections/<int:connection_id>/delete/",
        views.connection_delete,
        name="connection-delete",
    ),
    path("tokens/", api_pages.token_list, name="tokens"),
    path("tokens/<int:token_id>/revoke/", api_pages.token_revoke, name="token-revoke"),
    path("workflows/new/", views.workflow_create, name="create"),
    path("workflows/search/", views.workflow_search, name="search"),
    path("workflows/statuses/", views.workflow_statuses, name="statuses"),
    path("workflows/<int:workflow_id>/", views.workflow_detail, name="detail"),
    path("workflows/<int:workflow_id>/delete/", views.workflow_delete, name="delete"),
    path("workflows/<int:workflow_id>/rename/", views.workflow_rename, name="rename"),
    path(
        "workflows/<int:workflow_id>/documents/<int:document_id>/",
        views.document_download,
        name="document",
    ),
    path(
        "workflows/<int:workflow_id>/documents/upload/",
        views.document_upload,
        name="upload",
    ),
    path(
        "workflows/<int:workflow_id>/documents/<int:document_id>/discard/",
        views.upload_discard,
        name="upload-discard",
    ),
    re_path(
        r"^workflows/(?P<workflow_id>[0-9]+)/export\.(?P<fmt>md|json)$",
        views.workflow_export,
        name="export",
    ),
    # Last: an address nothing else serves is the app's 404 page, also with DEBUG on (only
    # addresses ending in a slash, so that one without it still gains it first).
    re_path(r"^(?P<path>.*/)$", views.not_found, name="not-found"),
]
