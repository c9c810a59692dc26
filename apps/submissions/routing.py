from django.urls import re_path

from apps.submissions.consumers import SubmissionConsumer

websocket_urlpatterns = [
    re_path(r"^ws/submissions/(?P<submission_id>[0-9]{1,18})/$", SubmissionConsumer.as_asgi()),
]
