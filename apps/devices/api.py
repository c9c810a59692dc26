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
                                          help_text="NVML readings per GPU (`gpus`: a list, each with its "
                                                    "`index` and, measured over the heartbeat interval, "
                                                    "`busy_fraction` from 0 to 1 or null and `busy_window_s`), "
                                                    "worker states.")

        def validate_telemetry(self, telemetry: dict) -> dict:
            gpus = telemetry.get("gpus", [])
            if not isinstance(gpus, list):
                raise serializers.ValidationError("`gpus` must be a list of readings, one per GPU.")
            for i, gpu in enumerate(gpus):
                if not isinstance(gpu, dict):
                    continue
                fraction, window = gpu.get("busy_fraction"), gpu.get("busy_window_s")
                if fraction is not None and (isinstance(fraction, bool) or not isinstance(fraction, int | float)
                                             or not 0 <= fraction <= 1):
                    raise serializers.ValidationError(
                        f"gpus[{i}].busy_fraction must be a number from 0 to 1 (the fraction of the interval the "
                        f"GPU ran kernels) or null where it was not measured, not {fraction!r}.")
                if window is not None and (isinstance(window, bool) or not isinstance(window, int | float)
                                           or window < 0):
                    raise serializers.ValidationError(
                        f"gpus[{i}].busy_window_s must be the seconds the reading covers (0 or more) or null, "
                        f"not {window!r}.")
            return telemetry

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


class RunnerCalibrationApi(APIView):
    authentication_classes = [RunnerAuthentication]
    permission_classes = [IsRunner]

    @extend_schema_serializer(component_name="RunnerCalibration")
    class InputSerializer(serializers.Serializer):
        worker = serializers.RegexField(r"^(gpu|cpu)\d+$", max_length=20,
                                        help_text="The worker measured: gpu0, gpu1 ... or cpu0.")
        device_model = serializers.CharField(max_length=200)
        copy_bandwidth_gbps = serializers.FloatField(min_value=1e-6, max_value=1e6,
                                                     help_text="Device-to-device copy, read + write, GB/s.")
        matmul_fp32_tflops = serializers.FloatField(min_value=1e-9, max_value=1e5,
                                                    help_text="Large fp32 matmul, TF32 off.")
        matmul_bf16_tflops = serializers.FloatField(min_value=1e-9, max_value=1e5, required=False,
                                                    allow_null=True, default=None)
        reference_kernel_us = serializers.FloatField(min_value=1e-3, max_value=1e9,
                                                     help_text="The fixed reference kernel's median time.")
        versions = serializers.DictField(required=False, default=dict)

    @extend_schema_serializer(component_name="RunnerCalibrationAnswer")
    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        is_outlier = serializers.BooleanField()
        comparison = serializers.DictField(help_text="Per ceiling: the pool median and slower_pct.")
        is_draining = serializers.BooleanField(source="runner.is_draining")
        drain_reason = serializers.CharField(source="runner.drain_reason")

    @extend_schema(summary="Runner: post measured ceilings (an outlier of its pool is drained)", tags=["runners"],
                   request=InputSerializer, responses=OutputSerializer)
    def post(self, request: Request) -> Response:
        runner = request.auth
        assert isinstance(runner, Runner)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        calibration = services.calibration_record(runner=runner, **serializer.validated_data)
        calibration.runner.refresh_from_db()
        return Response(self.OutputSerializer(calibration).data, status=201)
