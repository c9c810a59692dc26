"""The REST API: problems and submissions for entrants, job intake for runners. One view per operation."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_serializer,
    inline_serializer,
)
from rest_framework import exceptions, serializers, status
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.devices.authentication import IsRunner, RunnerAuthentication
from apps.devices.models import Runner
from apps.submissions import ane, lifecycle, selectors, services
from apps.submissions.models import ApiToken, Entrant, Evaluation, Problem, Submission
from apps.submissions.starters import LANGUAGE_FOR_DEVICE, starter_source
from gpu_runner import workdir as agent_workdir

ERROR_SCHEMA = inline_serializer(
    name="Error",
    fields={
        "error": inline_serializer(name="ErrorBody", fields={
            "code": serializers.CharField(),
            "message": serializers.CharField(),
            "fields": serializers.DictField(child=serializers.ListField(child=serializers.CharField())),
        }),
    },
)


def api_not_found(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
    """Any path under /api/ that no endpoint serves."""
    return JsonResponse({"error": {"code": "not_found", "message": f"No API endpoint at {request.path}: "
                                   "/api/docs/ lists them all (note the trailing slash).", "fields": {}}},
                        status=404)


def _errors(*codes: int) -> dict[int, Any]:
    return {code: OpenApiResponse(ERROR_SCHEMA) for code in codes}


# --- Problems ----------------------------------------------------------------------------------------

class ProblemOutput(serializers.Serializer):
    slug = serializers.CharField()
    title = serializers.CharField()
    level = serializers.IntegerField()
    hardware = serializers.ListField(child=serializers.CharField(), help_text="Pools the problem is offered on.")
    version = serializers.IntegerField()
    content_hash = serializers.CharField()
    url = serializers.CharField()


def _problem_row(problem: Problem) -> dict[str, Any]:
    return {
        "slug": problem.slug, "title": problem.title, "level": problem.level,
        "hardware": [pool.slug for pool in problem.pools.all()], "version": problem.version,
        "content_hash": problem.content_hash, "url": f"/api/v1/problems/{problem.slug}/",
    }


class ProblemListApi(APIView):
    @extend_schema_serializer(component_name="ProblemListFilter")
    class FilterSerializer(serializers.Serializer):
        hardware = serializers.CharField(required=False)
        level = serializers.IntegerField(required=False, min_value=1)

    @extend_schema(
        summary="List problems",
        parameters=[OpenApiParameter("hardware", str, description="Only problems offered on this pool."),
                    OpenApiParameter("level", int, description="Only this KernelBench level.")],
        responses={200: ProblemOutput(many=True), **_errors(400)},
    )
    def get(self, request: Request) -> Response:
        filters = self.FilterSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        problems = selectors.problem_list(pool=filters.validated_data.get("hardware"),
                                          level=filters.validated_data.get("level"))
        return Response(ProblemOutput([_problem_row(p) for p in problems], many=True).data)


class ProblemDetailApi(APIView):
    @extend_schema_serializer(component_name="ProblemDetail")
    class OutputSerializer(ProblemOutput):
        description = serializers.CharField()
        reference_source = serializers.CharField(help_text="The KernelBench problem file (class Model ...).")
        starter_language = serializers.CharField()
        starter_template = serializers.CharField(help_text="A ModelNew skeleton with the right signatures.")
        updated_at = serializers.DateTimeField()
        ane = serializers.DictField(allow_null=True, help_text=(
            "On an ANE pool: weights_url (the reference weights a package embeds, .npz), digest of the reference "
            "outputs, weights_seed, input_seed, atol, rtol (or error). Null elsewhere."))

    @extend_schema(
        summary="A problem, with its reference source and a starter template",
        parameters=[OpenApiParameter("language", str, description="Starter template language (cpp or cuda); "
                                     "default: that of its first pool's device.")],
        responses={200: OutputSerializer, **_errors(404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        problem = selectors.problem_get(slug=slug)
        if problem is None:
            raise exceptions.NotFound(f"No problem {slug!r}: GET /api/v1/problems/ lists them.")
        language = request.query_params.get("language")
        if not language:
            pool = next(iter(problem.pools.all()), None)
            language = LANGUAGE_FOR_DEVICE.get(pool.device if pool else "cpu", "cpp")
        if language not in ("cpp", "cuda"):
            raise exceptions.ValidationError({"language": ["Starter templates exist for cpp and cuda."]})
        data = _problem_row(problem) | {
            "description": problem.description, "reference_source": problem.source,
            "starter_language": language,
            "starter_template": starter_source(reference_source=problem.source, language=language),
            "updated_at": problem.updated_at,
            "ane": _problem_ane(problem),
        }
        return Response(self.OutputSerializer(data).data)


def _problem_ane(problem: Problem) -> dict[str, Any] | None:
    panel = ane.problem_ane_panel(problem=problem, pools=list(problem.pools.all()))
    if panel is None or "error" in panel:
        return panel
    return panel | {"weights_url": reverse("problem-ane-weights", args=[problem.slug])}


# --- Submissions -------------------------------------------------------------------------------------

class SubmissionOutput(serializers.Serializer):
    id = serializers.IntegerField()
    problem = serializers.CharField()
    problem_version = serializers.IntegerField()
    entrant = serializers.CharField(help_text="The entrant's slug.")
    entrant_kind = serializers.CharField()
    hardware = serializers.CharField()
    language = serializers.CharField()
    sha256 = serializers.CharField(allow_null=True, help_text="Null unless you may see the source.")
    created_at = serializers.DateTimeField()
    evaluation_id = serializers.IntegerField(allow_null=True)
    status = serializers.CharField(help_text="queued, running, done or failed (done and failed are final).")
    stage = serializers.CharField(help_text="queued, prescreen, compiling, checking, timing or done.")
    verdict = serializers.CharField(allow_null=True)
    correct = serializers.BooleanField(allow_null=True)
    runtime_us = serializers.FloatField(allow_null=True)
    eager_us = serializers.FloatField(allow_null=True)
    compile_us = serializers.FloatField(allow_null=True)
    speedup_vs_eager = serializers.FloatField(allow_null=True)
    speedup_vs_compile = serializers.FloatField(allow_null=True)
    message = serializers.CharField(allow_blank=True)
    attempt = serializers.IntegerField()
    queued_at = serializers.DateTimeField(allow_null=True)
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    statistics = serializers.DictField(help_text="The evaluator's result object, as is (logs only for "
                                                 "those who may see the source).")
    source_visible = serializers.BooleanField()
    source = serializers.CharField(allow_null=True, help_text="Null unless you may see it.")
    log = serializers.CharField(allow_null=True, help_text="Build/run log; null unless you may see the source.")
    duplicate = serializers.BooleanField(required=False, help_text="On POST: the same source was already "
                                         "submitted; this is the existing submission.")


def _submission_data(submission: Submission, user: Any, latest: Evaluation | None = None) -> dict[str, Any]:
    """`latest`: the submission's latest evaluation where the caller has it (a POST), else it is read."""
    evaluation = latest or selectors.submission_latest_evaluation(submission=submission)
    visible = selectors.submission_source_visible(submission=submission, user=user)
    message = evaluation.message if evaluation else ""
    if evaluation is not None and not selectors.evaluation_message_visible(
            evaluation=evaluation, source_visible=visible):
        message = (f"{evaluation.get_verdict_display()}: the details can quote the source and are shown to the "
                   "entrant's owner only.")
    return {
        "id": submission.pk, "problem": submission.problem.slug,
        "problem_version": submission.problem_version.version, "entrant": submission.entrant.slug,
        "entrant_kind": submission.entrant.kind, "hardware": submission.pool.slug,
        # The hash of a private source would let anyone confirm a guess of it.
        "language": submission.language, "sha256": submission.sha256 if visible else None,
        "created_at": submission.created_at,
        "evaluation_id": evaluation.pk if evaluation else None,
        "status": evaluation.status if evaluation else Evaluation.STATUS_QUEUED,
        "stage": evaluation.stage if evaluation else "queued",
        "verdict": (evaluation.verdict or None) if evaluation else None,
        "correct": evaluation.correct if evaluation else None,
        "runtime_us": evaluation.runtime_us if evaluation else None,
        "eager_us": evaluation.eager_us if evaluation else None,
        "compile_us": evaluation.compile_us if evaluation else None,
        "speedup_vs_eager": evaluation.speedup_vs_eager if evaluation else None,
        "speedup_vs_compile": evaluation.speedup_vs_compile if evaluation else None,
        "message": message,
        "attempt": evaluation.attempt if evaluation else 0,
        "queued_at": evaluation.queued_at if evaluation else None,
        "started_at": evaluation.started_at if evaluation else None,
        "finished_at": evaluation.finished_at if evaluation else None,
        "statistics": (selectors.evaluation_public_result(evaluation=evaluation, source_visible=visible)
                       if evaluation else {}),
        "source_visible": visible,
        "source": submission.source if visible else None,
        "log": (evaluation.log if evaluation else "") if visible else None,
    }


def _acting_entrant(request: Request, entrant_slug: str | None) -> Entrant:
    """The entrant a request acts as: its token's, or one its logged-in user owns."""
    if isinstance(request.auth, ApiToken):
        entrant = request.auth.entrant
        if entrant_slug and entrant_slug != entrant.slug:
            raise exceptions.PermissionDenied(
                f"This token belongs to entrant {entrant.slug}; it cannot act as {entrant_slug}.")
        return entrant
    owned = Entrant.objects.filter(owner=request.user)
    if entrant_slug:
        named = owned.filter(slug=entrant_slug).first()
        if named is None:
            raise exceptions.PermissionDenied(f"You do not own an entrant {entrant_slug!r}.")
        return named
    entrants = list(owned[:2])
    if not entrants:
        raise exceptions.PermissionDenied("Your account owns no entrant; ask an admin to create one for you.")
    if len(entrants) > 1:
        raise exceptions.ValidationError({"entrant": ["You own several entrants: say which one (its slug)."]})
    return entrants[0]


def _package_upload_source(package: Any, source: str) -> str:
    """A multipart `package` part as the submission text the services take (`base64:<zip>`)."""
    if source.strip():
        raise exceptions.ValidationError({"package": ["Send the package or a source, not both."]})
    if package.size > settings.MAX_PACKAGE_BYTES:
        raise services.SubmissionError(ane.package_too_big_message(package.size), code="too_large",
                                       fields={"package": [f"At most {settings.MAX_PACKAGE_BYTES} bytes."]})
    return ane.package_source(package.read())


def _workdir_archive(data: dict[str, Any]) -> bytes | None:
    """A CUDA Agent workdir archive from a multipart `workdir` part or a JSON `workdir_base64`; None if neither."""
    upload, encoded = data.get("workdir"), (data.get("workdir_base64") or "").strip()
    if upload is None and not encoded:
        return None
    if (upload is not None and encoded) or data["source"].strip() or data.get("package") is not None:
        raise exceptions.ValidationError({"workdir": ["Send the workdir once, and no source or package with it."]})
    limit = agent_workdir.MAX_ARCHIVE_BYTES
    if upload is not None:
        if upload.size > limit:
            raise services.SubmissionError(f"The workdir archive is {upload.size:,} bytes; the limit is {limit:,}. "
                                           "Archive the sources only.", code="too_large",
                                           fields={"workdir": [f"At most {limit} bytes."]})
        return bytes(upload.read(limit + 1))
    if len(encoded) > limit * 4 // 3 + 8:
        raise services.SubmissionError(f"The workdir archive is over the limit of {limit:,} bytes. Archive the "
                                       "sources only.", code="too_large", fields={"workdir": [f"At most {limit} bytes."]})
    try:
        return base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise services.SubmissionError("workdir_base64 is not valid base64: send `base64 -w0 workdir.zip`.",
                                       code="invalid_workdir", fields={"workdir_base64": ["Not base64."]}) from None


class SubmissionListCreateApi(APIView):
    @extend_schema_serializer(component_name="SubmissionCreate")
    class InputSerializer(serializers.Serializer):
        problem = serializers.CharField(required=False, allow_blank=True, default="",
                                        help_text="The problem's slug (for a workdir: found from its model.py when "
                                                  "left out).")
        source = serializers.CharField(trim_whitespace=False, allow_blank=True, required=False, default="",
                                       help_text="The solution file (class ModelNew ...); on an ANE pool also "
                                                 "`base64:<zipped .mlpackage>`.")
        package = serializers.FileField(required=False, help_text="ANE pools, multipart only: the zipped "
                                        ".mlpackage as a file part, instead of `source`.")
        workdir = serializers.FileField(required=False, help_text="Multipart only: a CUDA Agent workdir as a zip "
                                        "or tar.gz (model.py, model_new.py, binding.cpp, kernels/...).")
        workdir_base64 = serializers.CharField(required=False, allow_blank=True, default="",
                                               help_text="JSON: the same workdir archive, base64-encoded.")
        rules = serializers.CharField(required=False, allow_blank=True, default="",
                                      help_text="For a workdir: kernelhub or cuda_agent (the default).")
        language = serializers.CharField(required=False, allow_blank=True,
                                         help_text="cpp, cuda, triton or cupy; detected when left out.")
        hardware = serializers.CharField(required=False, allow_blank=True,
                                         help_text="The pool's slug (cpu, h200, ...); default: the site's.")
        rerun = serializers.BooleanField(required=False, default=False,
                                         help_text="Evaluate again even if this exact source was submitted.")
        entrant = serializers.CharField(required=False, allow_blank=True,
                                        help_text="For a logged-in user owning several entrants: which one.")

    @extend_schema_serializer(component_name="SubmissionListFilter")
    class FilterSerializer(serializers.Serializer):
        mine = serializers.BooleanField(required=False, default=False)
        entrant = serializers.CharField(required=False)
        limit = serializers.IntegerField(required=False, min_value=1, max_value=500, default=100)

    def get_permissions(self) -> list[BasePermission]:
        return [IsAuthenticated()]

    @extend_schema(
        summary="Your submissions (newest first)",
        parameters=[OpenApiParameter("mine", bool, description="Your entrants' submissions (the only list "
                                     "there is; leaderboards list everyone's)."),
                    OpenApiParameter("entrant", str, description="Only this entrant of yours."),
                    OpenApiParameter("limit", int)],
        responses={200: SubmissionOutput(many=True), **_errors(400, 401)},
    )
    def get(self, request: Request) -> Response:
        filters = self.FilterSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        entrant_id = None
        if isinstance(request.auth, ApiToken):
            entrant_id = request.auth.entrant_id
        if filters.validated_data.get("entrant"):
            entrant_id = _acting_entrant(request, filters.validated_data["entrant"]).pk
        submissions = selectors.submission_list_for_user(user=request.user, entrant_id=entrant_id,
                                                         limit=filters.validated_data["limit"])
        return Response(SubmissionOutput([_submission_data(s, request.user) for s in submissions], many=True).data)

    @extend_schema(
        summary="Submit a solution",
        description="Creates a submission and queues its evaluation on the pool's runners. The same source for "
                    "the same problem and pool returns the existing submission (200, duplicate=true) unless "
                    "rerun=true. Rate limited per entrant (429 with Retry-After).",
        request=InputSerializer,
        responses={201: SubmissionOutput, 200: SubmissionOutput, **_errors(400, 401, 403, 429)},
    )
    def post(self, request: Request) -> Response:
        if not isinstance(request.data, dict):
            raise exceptions.ParseError("expected a JSON object")
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        entrant = _acting_entrant(request, data.get("entrant") or None)
        source = data["source"]
        archive = _workdir_archive(data)
        if archive is not None:
            submission, evaluation, created = services.submission_create_from_workdir(
                entrant=entrant, archive=archive, problem_slug=data["problem"] or None,
                rules=data["rules"] or None, hardware=data.get("hardware") or None, rerun=data["rerun"])
            body = _submission_data(submission, request.user, latest=evaluation) | {"duplicate": not created}
            return Response(SubmissionOutput(body).data,
                            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)
        if not data["problem"]:
            raise exceptions.ValidationError({"problem": ["This field is required (the problem's slug)."]})
        if data.get("package") is not None:
            source = _package_upload_source(data["package"], source)
        submission, evaluation, created = services.submission_create(
            entrant=entrant, problem_slug=data["problem"], source=source,
            language=data.get("language") or None, hardware=data.get("hardware") or None, rerun=data["rerun"],
        )
        body = _submission_data(submission, request.user, latest=evaluation) | {"duplicate": not created}
        return Response(SubmissionOutput(body).data,
                        status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class SubmissionDetailApi(APIView):
    @extend_schema(
        summary="A submission and its latest evaluation",
        description="Anyone may read the status and timings; the source and logs only its owner (and staff), "
                    "until the entrant publishes its sources or the problem's reveal date passes.",
        responses={200: SubmissionOutput, **_errors(401, 404)},
    )
    def get(self, request: Request, submission_id: int) -> Response:
        submission = selectors.submission_get(submission_id=submission_id)
        if submission is None:
            raise exceptions.NotFound(f"No submission {submission_id}.")
        return Response(SubmissionOutput(_submission_data(submission, request.user)).data)


# --- Runners' job intake -----------------------------------------------------------------------------

class JobOutput(serializers.Serializer):
    evaluation_id = serializers.IntegerField()
    status = serializers.CharField()
    stage = serializers.CharField()
    attempt = serializers.IntegerField()


def _job_data(evaluation: Evaluation) -> dict[str, Any]:
    return JobOutput({"evaluation_id": evaluation.pk, "status": evaluation.status, "stage": evaluation.stage,
                      "attempt": evaluation.attempt}).data


JOB_TOKEN_PARAMETER = OpenApiParameter("X-Job-Token", OpenApiTypes.STR, OpenApiParameter.HEADER, required=True,
                                       description="The job token from the task's payload.")


class RunnerJobApi(APIView):
    authentication_classes = [RunnerAuthentication]
    permission_classes = [IsRunner]

    def runner_and_token(self, request: Request) -> tuple[Runner, str]:
        runner = request.auth
        assert isinstance(runner, Runner)
        return runner, request.headers.get("X-Job-Token", "")


class JobClaimApi(RunnerJobApi):
    @extend_schema(summary="Runner: claim a job (queued -> running)", request=None, tags=["runners"],
                   parameters=[JOB_TOKEN_PARAMETER], responses={200: JobOutput, **_errors(401, 403, 404, 409)})
    def post(self, request: Request, evaluation_id: int) -> Response:
        runner, token = self.runner_and_token(request)
        evaluation = lifecycle.evaluation_claim(evaluation_id=evaluation_id, runner=runner, job_token=token)
        return Response(_job_data(evaluation))


class JobStageApi(RunnerJobApi):
    @extend_schema_serializer(component_name="JobStage")
    class InputSerializer(serializers.Serializer):
        stage = serializers.ChoiceField(choices=lifecycle.JOB_STAGES)

    @extend_schema(summary="Runner: report a stage (the same stage again is a keep-alive)", tags=["runners"],
                   parameters=[JOB_TOKEN_PARAMETER], request=InputSerializer,
                   responses={200: JobOutput, **_errors(400, 401, 403, 404, 409)})
    def post(self, request: Request, evaluation_id: int) -> Response:
        runner, token = self.runner_and_token(request)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        evaluation = lifecycle.evaluation_stage(evaluation_id=evaluation_id, runner=runner, job_token=token,
                                               stage=serializer.validated_data["stage"])
        return Response(_job_data(evaluation))


class JobResultApi(RunnerJobApi):
    @extend_schema_serializer(component_name="JobResult")
    class InputSerializer(serializers.Serializer):
        result = serializers.DictField(help_text="The evaluator's JSON object, as `gpu_runner evaluate --json` "
                                                 "prints it.")

    @extend_schema(summary="Runner: post the result (running -> done, once)", tags=["runners"],
                   parameters=[JOB_TOKEN_PARAMETER], request=InputSerializer,
                   responses={200: JobOutput, **_errors(400, 401, 403, 404, 409)})
    def post(self, request: Request, evaluation_id: int) -> Response:
        runner, token = self.runner_and_token(request)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        evaluation = lifecycle.evaluation_finish(evaluation_id=evaluation_id, runner=runner, job_token=token,
                                                result=serializer.validated_data["result"])
        return Response(_job_data(evaluation))


class JobFailApi(RunnerJobApi):
    @extend_schema_serializer(component_name="JobFail")
    class InputSerializer(serializers.Serializer):
        message = serializers.CharField(max_length=2000, help_text="What went wrong on the runner.")

    @extend_schema(summary="Runner: give a job back after a failure of the runner (re-queued at once)",
                   tags=["runners"], parameters=[JOB_TOKEN_PARAMETER], request=InputSerializer,
                   responses={200: JobOutput, **_errors(400, 401, 403, 404, 409)})
    def post(self, request: Request, evaluation_id: int) -> Response:
        runner, token = self.runner_and_token(request)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        evaluation = lifecycle.evaluation_give_up(evaluation_id=evaluation_id, runner=runner, job_token=token,
                                                 message=serializer.validated_data["message"])
        return Response(_job_data(evaluation))
