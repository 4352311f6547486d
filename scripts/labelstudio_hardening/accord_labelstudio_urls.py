"""The URLs of accord's Label Studio settings: Label Studio's own, two of them guarded.

Stock 1.23.2 lists, and adds to, the drafts of any task id for any signed-in user
(``AnnotationDraftListAPI`` checks no permission), and the labelling UI autosaves an
annotator's unfinished work there: here only who may open the task sees them. It
also lists an organisation's members to anyone holding a membership there, revoked
ones included: here only to active members. And any user may ``PATCH /api/users/{id}``
of anyone in their organisation, the admin's profile included (username, names, phone):
here a user changes only their own.
"""

from core.urls import urlpatterns as label_studio_urlpatterns
from django.urls import path, re_path
from organizations.api import OrganizationMemberListAPI
from organizations.models import Organization
from rest_framework.exceptions import PermissionDenied
from rest_framework.generics import get_object_or_404
from tasks.api import AnnotationDraftListAPI
from tasks.models import Task
from users.api import UserAPI


class TaskDraftListAPI(AnnotationDraftListAPI):
    def _task(self) -> Task:
        task = get_object_or_404(Task.objects.for_user(self.request.user), pk=self.kwargs["pk"])
        self.check_object_permissions(self.request, task)
        return task

    def filter_queryset(self, queryset):
        return queryset.filter(task=self._task())

    def perform_create(self, serializer):
        self._task()
        super().perform_create(serializer)


class ActiveMemberListAPI(OrganizationMemberListAPI):
    def get_queryset(self):
        active = Organization.objects.filter(organizationmember__user=self.request.user, organizationmember__deleted_at__isnull=True)
        get_object_or_404(active, pk=self.kwargs[self.lookup_field])
        return super().get_queryset()


class OwnProfileUserAPI(UserAPI):
    """Label Studio's user API, but a profile is changed by its user alone."""

    def _own(self, request, pk) -> None:
        if str(pk) != str(request.user.pk):
            raise PermissionDenied("a user changes only their own profile")

    def update(self, request, *args, **kwargs):
        self._own(request, kwargs.get("pk"))
        return super().update(request, *args, **kwargs)

    def partial_update(self, request, *args, **kwargs):
        self._own(request, kwargs.get("pk"))
        return super().partial_update(request, *args, **kwargs)


_USER = OwnProfileUserAPI.as_view({"get": "retrieve", "patch": "partial_update", "delete": "destroy"})


# Matched before Label Studio's own patterns of the same paths, which keep their names for reverse().
urlpatterns = [
    path("api/tasks/<int:pk>/drafts", TaskDraftListAPI.as_view()),
    path("api/tasks/<int:pk>/annotations/<int:annotation_id>/drafts", TaskDraftListAPI.as_view()),
    path("api/organizations/<int:pk>/memberships", ActiveMemberListAPI.as_view()),
    # the router's detail route, with and without its trailing slash and format suffix (users/2.json/)
    re_path(r"^api/users/(?P<pk>[^/.]+)(?:\.(?P<format>[a-z0-9]+))?/?$", _USER),
    *label_studio_urlpatterns,
]
