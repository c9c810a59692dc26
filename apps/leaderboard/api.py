"""The leaderboard API: read-only, public. One APIView per operation; numbers come from selectors.py."""

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    PolymorphicProxySerializer,
    extend_schema,
    extend_schema_serializer,
)
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.devices.models import HardwarePool
from apps.leaderboard import ane, selectors
from apps.submissions.api import ERROR_SCHEMA
from apps.submissions.models import Problem

# Which board a leaderboard answer is: the GPU and CPU pools' columns, or the Neural Engine's.
BOARD_KERNELBENCH, BOARD_ANE = "kernelbench", "ane"

HARDWARE_PARAM = OpenApiParameter(
    "hardware", OpenApiTypes.STR, description="Hardware pool slug (cpu, h200, ...). Default: the site's default pool."
)


def _pool_or_404(slug: str) -> HardwarePool:
    pool = HardwarePool.objects.filter(slug=slug, is_active=True).first()
    if pool is None:
        known = ", ".join(selectors.pool_slugs()) or "none yet"
        raise NotFound(f"Unknown hardware pool '{slug}'. Known pools: {known}.")
    return pool


class RowSerializer(serializers.Serializer):
    rank = serializers.IntegerField()
    entrant = serializers.CharField()
    entrant_slug = serializers.CharField()
    kind = serializers.CharField()
    is_baseline = serializers.BooleanField()
    problems = serializers.IntegerField(help_text=(
        "The denominator of this row's rates: the suite's problems; for a baseline, those where it was measured."))
    attempted = serializers.IntegerField()
    solved = serializers.IntegerField()
    fast_0 = serializers.FloatField(allow_null=True, help_text="Correctness rate over the suite, 0..1.")
    fast_1_vs_eager = serializers.FloatField(allow_null=True)
    fast_1_vs_compile = serializers.FloatField(allow_null=True)
    geomean_speedup_vs_eager = serializers.FloatField(
        allow_null=True, help_text="Geometric mean over solved problems only; see geomean_count_vs_eager.")
    geomean_speedup_vs_compile = serializers.FloatField(allow_null=True)
    geomean_count_vs_eager = serializers.IntegerField()
    geomean_count_vs_compile = serializers.IntegerField()
    last_result_at = serializers.DateTimeField(allow_null=True)


class LeaderboardRowSerializer(RowSerializer):
    p = serializers.FloatField()
    fast_p_vs_eager = serializers.FloatField(allow_null=True)
    fast_p_vs_compile = serializers.FloatField(allow_null=True)


class ProblemEntrySerializer(serializers.Serializer):
    rank = serializers.IntegerField(allow_null=True, help_text="null for the baseline rows.")
    entrant = serializers.CharField()
    entrant_slug = serializers.CharField()
    kind = serializers.CharField()
    is_baseline = serializers.BooleanField()
    submission_id = serializers.IntegerField(allow_null=True)
    evaluation_id = serializers.IntegerField(allow_null=True)
    language = serializers.CharField()
    runtime_us = serializers.FloatField()
    speedup_vs_eager = serializers.FloatField(allow_null=True)
    speedup_vs_compile = serializers.FloatField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


class LeaderboardApi(APIView):
    authentication_classes: list = []  # public and read-only: no token, no session, no CSRF

    class InputSerializer(serializers.Serializer):
        hardware = serializers.SlugField(required=False, max_length=40)
        level = serializers.IntegerField(
            required=False, min_value=1, max_value=9,
            error_messages={"invalid": "level must be a whole number such as 1, 2 or 3."},
        )
        p = serializers.FloatField(
            required=False, min_value=0.0, max_value=1000.0,
            error_messages={"invalid": "p must be a number such as 1.0 or 1.5 (the speedup threshold)."},
        )

    @extend_schema_serializer(component_name="Leaderboard")
    class OutputSerializer(serializers.Serializer):
        board = serializers.CharField(help_text="'kernelbench': this shape (GPU and CPU pools); an ANE pool answers "
                                      "with AneLeaderboard's shape and 'ane'.")
        hardware = serializers.CharField()
        level = serializers.IntegerField(allow_null=True)
        p = serializers.FloatField(allow_null=True)
        problems = serializers.IntegerField()
        geomean_over = serializers.CharField(help_text="'solved': failures are left out of the geometric mean.")
        rows = LeaderboardRowSerializer(many=True, help_text="p, fast_p_vs_eager, fast_p_vs_compile: only with p.")

    @extend_schema(
        operation_id="leaderboard",
        summary="The leaderboard of a hardware pool",
        description="One row per entrant (the baselines PyTorch eager and torch.compile always included), ranked. "
        "Rates are fractions of ALL active problems of the pool (and level): unattempted and failed problems "
        "count as not fast. fast_p fields appear when p is given. An ANE pool (`<chip>-ane`) answers with its own "
        "board, the same JSON as /api/v1/leaderboard/ane/ (`board` says which); level and p do not apply there.",
        parameters=[
            HARDWARE_PARAM,
            OpenApiParameter("level", OpenApiTypes.INT, description="KernelBench level (1, 2, 3, ...)."),
            OpenApiParameter("p", OpenApiTypes.FLOAT, description="Speedup threshold for fast_p (0 = correctness)."),
        ],
        responses={
            200: PolymorphicProxySerializer(
                component_name="LeaderboardOfAnyPool",
                # Lazy: the ANE view is defined below.
                serializers=lambda: {BOARD_KERNELBENCH: LeaderboardApi.OutputSerializer,
                                     BOARD_ANE: AneLeaderboardApi.OutputSerializer},
                resource_type_field_name="board",
            ),
            400: ERROR_SCHEMA, 404: ERROR_SCHEMA,
        },
    )
    def get(self, request: Request) -> Response:
        params = self.InputSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        data = params.validated_data
        pool = _pool_or_404(data.get("hardware") or settings.DEFAULT_HARDWARE_POOL)
        level, p = data.get("level"), data.get("p")
        if pool.kind == HardwarePool.KIND_ANE:
            # Its columns are not speedups over PyTorch: answer with the ANE board rather than GPU columns of nulls.
            unused = {name: [f"{name} does not apply to an ANE pool's board: leave it out "
                             f"(/api/v1/leaderboard/?hardware={pool.slug})."]
                      for name in ("level", "p") if name in data}
            if unused:
                raise serializers.ValidationError(unused)
            return Response(_ane_answer(pool))
        rows = selectors.leaderboard_rows(pool=pool.slug, level=level, p=1.0 if p is None else p)
        row_serializer = RowSerializer if p is None else LeaderboardRowSerializer
        return Response({
            "board": BOARD_KERNELBENCH, "hardware": pool.slug, "level": level, "p": p,
            "problems": rows[0].suite_size if rows else 0,
            "geomean_over": "solved",
            "rows": row_serializer(rows, many=True).data,
        })


class ProblemLeaderboardApi(APIView):
    authentication_classes: list = []

    class InputSerializer(serializers.Serializer):
        hardware = serializers.SlugField(required=False, max_length=40)

    @extend_schema_serializer(component_name="ProblemLeaderboard")
    class OutputSerializer(serializers.Serializer):
        problem = serializers.CharField()
        hardware = serializers.CharField()
        entries = ProblemEntrySerializer(many=True)

    @extend_schema(
        operation_id="problem_leaderboard",
        summary="The board of one problem on a hardware pool",
        description="The best accepted submission per entrant, ranked by runtime (equal runtimes share a rank), "
        "with the measured PyTorch eager and torch.compile times placed among them (rank null).",
        parameters=[HARDWARE_PARAM],
        responses={200: OutputSerializer},
    )
    def get(self, request: Request, slug: str) -> Response:
        params = self.InputSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        pool = _pool_or_404(params.validated_data.get("hardware") or settings.DEFAULT_HARDWARE_POOL)
        try:
            entries = selectors.problem_board(slug=slug, pool=pool.slug)
        except Problem.DoesNotExist:
            raise NotFound(
                f"No active problem '{slug}' on hardware pool '{pool.slug}'. List problems at /api/v1/problems/."
            ) from None
        return Response({
            "problem": slug, "hardware": pool.slug, "entries": ProblemEntrySerializer(entries, many=True).data,
        })


class AneRowSerializer(serializers.Serializer):
    rank = serializers.IntegerField()
    entrant = serializers.CharField()
    entrant_slug = serializers.CharField()
    kind = serializers.CharField()
    problems = serializers.IntegerField(help_text="Problems on the pool: the denominator of solved.")
    solved = serializers.IntegerField()
    geomean_speedup_vs_coreml = serializers.FloatField(
        allow_null=True, help_text="Over Core ML's default conversion; geometric mean over solved problems.")
    geomean_count = serializers.IntegerField()
    mean_tflops = serializers.FloatField(allow_null=True)
    mean_ane_cost_share = serializers.FloatField(allow_null=True, help_text="0..1, mean over solved problems.")
    last_result_at = serializers.DateTimeField(allow_null=True)


class AneEntrySerializer(serializers.Serializer):
    problem_slug = serializers.CharField()
    entrant = serializers.CharField()
    entrant_slug = serializers.CharField()
    kind = serializers.CharField()
    submission_id = serializers.IntegerField()
    runtime_us = serializers.FloatField(help_text="Median, compute units CPU_AND_NE.")
    coreml_us = serializers.FloatField(allow_null=True, help_text="Core ML default conversion, compute units ALL.")
    coreml_cpu_us = serializers.FloatField(allow_null=True)
    speedup_vs_coreml = serializers.FloatField(allow_null=True)
    speedup_vs_coreml_cpu = serializers.FloatField(allow_null=True)
    tflops = serializers.FloatField(allow_null=True)
    tflops_per_watt = serializers.FloatField(allow_null=True, help_text="Only where powermetrics ran.")
    ane_op_share = serializers.FloatField(allow_null=True)
    ane_cost_share = serializers.FloatField(allow_null=True)
    chip = serializers.CharField()
    finished_at = serializers.DateTimeField(allow_null=True)


class AneLeaderboardApi(APIView):
    authentication_classes: list = []

    class InputSerializer(serializers.Serializer):
        hardware = serializers.SlugField(max_length=40, error_messages={
            "required": "Name the ANE pool: ?hardware=m4-ane (a `<chip>-ane` slug)."})

    @extend_schema_serializer(component_name="AneLeaderboard")
    class OutputSerializer(serializers.Serializer):
        board = serializers.CharField(help_text="Always 'ane' here (see Leaderboard).")
        hardware = serializers.CharField()
        problems = serializers.IntegerField()
        rows = AneRowSerializer(many=True)
        entries = AneEntrySerializer(many=True, help_text="Each entrant's best result per problem, fastest first.")

    @extend_schema(
        operation_id="ane_leaderboard",
        summary="The board of an ANE pool (Core ML on the Neural Engine)",
        description="From results Mac runners reported: speedup over Core ML's default conversion, TFLOPS, and the "
        "shares of ops and cost placed on the Neural Engine (docs/ANE.md). Empty rows until a Mac reports.",
        parameters=[OpenApiParameter("hardware", OpenApiTypes.STR, required=True, description="An ANE pool slug.")],
        responses={200: OutputSerializer, 400: ERROR_SCHEMA, 404: ERROR_SCHEMA},
    )
    def get(self, request: Request) -> Response:
        params = self.InputSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        pool = _pool_or_404(params.validated_data["hardware"])
        if pool.kind != HardwarePool.KIND_ANE:
            raise NotFound(f"Pool '{pool.slug}' is not an ANE pool: use /api/v1/leaderboard/?hardware={pool.slug}.")
        return Response(_ane_answer(pool))


def _ane_answer(pool: HardwarePool) -> dict:
    """The ANE board as JSON, for both URLs that serve it."""
    data = ane.ane_board(pool=pool.slug)
    entries = [e for item in data["problems"] for e in item["entries"]]
    return {
        "board": BOARD_ANE, "hardware": pool.slug, "problems": data["suite_size"],
        "rows": AneRowSerializer(data["rows"], many=True).data,
        "entries": AneEntrySerializer(entries, many=True).data,
    }
