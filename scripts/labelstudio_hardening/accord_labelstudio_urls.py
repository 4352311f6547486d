"""The URLs of accord's Label Studio settings: Label Studio's own, two of them guarded.

Stock 1.23.2 lists, and adds to, the drafts of any task id for any signed-in user
(``AnnotationDraftListAPI`` checks no permission), and the labelling UI autosaves an
annotator's unfinished work there: here only who may open the task sees them. It
also lists an organisation's members to anyone holding a membership there, revoked
ones included: here only to active members.
"""

from core.urls import urlpatterns as label_studio_urlpatterns
from django.urls import path
from organizations.api import OrganizationMemberListAPI
from organizations.models import Organization
from rest_framework.generics import get_object_or_404
from tasks.api import AnnotationDraftListAPI
from tasks.models import Task


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


# Matched before Label Studio's own patterns of the same paths, which keep their names for reverse().
urlpatterns = [
    path("api/tasks/<int:pk>/drafts", TaskDraftListAPI.as_view()),
    path("api/tasks/<int:pk>/annotations/<int:annotation_id>/drafts", TaskDraftListAPI.as_view()),
    path("api/organizations/<int:pk>/memberships", ActiveMemberListAPI.as_view()),
    *label_studio_urlpatterns,
]
