"""The runner-facing API of the devices app: who am I, and I am alive."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.devices import services
from apps.devices.authentication import IsRunner, RunnerAuthentication
from apps.devices.models import Runner


class RunnerMeApi(APIView):
    authentication_classes = [RunnerAuthentication]
    permission_classes = [IsRunner]

    @extend_schema_serializer(component_name="RunnerConfig")
    class OutputSerializer(serializers.Serializer):
        name = serializers.CharField()
        pool = serializers.CharField()
        queue = serializers.CharField(help_text="The Celery queue to consume: pool.<slug>.")
        device = serializers.CharField(help_text="The evaluator's --device.")
        languages = serializers.ListField(child=serializers.CharField())
        broker_url = serializers.CharField()
        visibility_timeout_s = serializers.IntegerField()
        soft_time_limit_s = serializers.IntegerField()
        time_limit_s = serializers.IntegerField()
        keepalive_s = serializers.IntegerField(help_text="How often to re-post a running job's stage.")
        heartbeat_s = serializers.IntegerField()
        is_draining = serializers.BooleanField()
        is_disabled = serializers.BooleanField()

    @extend_schema(summary="Runner: its pool, queue and broker", tags=["runners"], responses=OutputSerializer)
    def get(self, request: Request) -> Response:
        runner = request.auth
        assert isinstance(runner, Runner)
        return Response(self.OutputSerializer(services.runner_config(runner=runner)).data)


class RunnerHeartbeatApi(APIView):
    authentication_classes = [RunnerAuthentication]
    permission_classes = [IsRunner]

    @extend_schema_serializer(component_name="RunnerHeartbeat")
    class InputSerializer(serializers.Serializer):
        host_info = serializers.DictField(required=False, default=dict,
                                          help_text="Host name, OS, CPU, driver and library versions.")
        telemetry = serializers.DictField(required=False, default=dict,
                                          help_text="NVML readings per GPU, worker states.")

    @extend_schema_serializer(component_name="RunnerHeartbeatAnswer")
    class OutputSerializer(serializers.Serializer):
        name = serializers.CharField()
        last_heartbeat_at = serializers.DateTimeField()
        is_draining = serializers.BooleanField()

    @extend_schema(summary="Runner: heartbeat with host information and telemetry", tags=["runners"],
                   request=InputSerializer, responses=OutputSerializer)
    def post(self, request: Request) -> Response:
        runner = request.auth
        assert isinstance(runner, Runner)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        runner = services.runner_heartbeat(runner=runner, host_info=serializer.validated_data["host_info"],
                                           telemetry=serializer.validated_data["telemetry"])
        return Response(self.OutputSerializer(runner).data)
