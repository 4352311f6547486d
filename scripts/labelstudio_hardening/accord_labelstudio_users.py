"""The user update serializer of accord's Label Studio settings: a user's organisation is not theirs to change.

Label Studio's user API refuses (HTTP 405) a PATCH that names a read-only field.
"""

from users.serializers import BaseUserSerializerUpdate


class UserSerializerUpdate(BaseUserSerializerUpdate):
    class Meta(BaseUserSerializerUpdate.Meta):
        read_only_fields = (*BaseUserSerializerUpdate.Meta.read_only_fields, "active_organization")
