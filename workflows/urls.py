from django.urls import path

from . import views

app_name = "workflows"

urlpatterns = [
    path("", views.home, name="home"),
    path("workflows/new/", views.workflow_create, name="create"),
    path("workflows/<int:workflow_id>/", views.workflow_detail, name="detail"),
    path(
        "workflows/<int:workflow_id>/documents/<int:document_id>/",
        views.document_download,
        name="document",
    ),
]
