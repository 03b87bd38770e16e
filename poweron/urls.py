"""URL configuration."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from workflows.agui.urls import urlpatterns as agui_urlpatterns
from workflows.api import urlpatterns as api_urlpatterns
from workflows.api.compat import urlpatterns as openai_urlpatterns

urlpatterns = [
    path("admin/", admin.site.urls),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    *agui_urlpatterns,  # before the API's, whose catch-all answers 404
    *api_urlpatterns,
    *openai_urlpatterns,
    path("", include("workflows.urls")),
]
