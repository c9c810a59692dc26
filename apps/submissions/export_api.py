"""Download the open dataset (apps/submissions/datasets.py) from the API.

GET /api/v1/dataset/                     -> index: when it was exported, the files with their sizes and hashes
GET /api/v1/dataset/<file>               -> problems.parquet, submissions.parquet, evaluations.parquet,
                                            schema.json or README.md
The export is rebuilt when older than DATASET_MAX_AGE_S, so a burst of downloads costs one export.
"""

from django.conf import settings
from django.http import FileResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiTypes, extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.submissions.datasets import FILES, dataset_latest

CONTENT_TYPES = {".parquet": "application/vnd.apache.parquet", ".json": "application/json",
                 ".md": "text/markdown; charset=utf-8"}


class DatasetIndexApi(APIView):
    # Public data: no authentication, so a stale token in a download script does not turn into a 401.
    authentication_classes: list = []
    permission_classes = [AllowAny]

    @extend_schema(operation_id="dataset_index", summary="The open dataset's files", responses=OpenApiTypes.OBJECT,
                   tags=["dataset"])
    def get(self, request: Request) -> Response:
        _, manifest = dataset_latest(max_age_s=settings.DATASET_MAX_AGE_S)
        files = [
            {"name": info["file"], "url": request.build_absolute_uri(f"/api/v1/dataset/{info['file']}"),
             "rows": info["rows"], "bytes": info["bytes"], "sha256": info["sha256"]}
            for info in manifest["tables"].values()
        ]
        return Response({
            "generated_at": manifest["generated_at"],
            "schema_version": manifest["schema_version"],
            "files": files,
            "schema": request.build_absolute_uri("/api/v1/dataset/schema.json"),
            "readme": request.build_absolute_uri("/api/v1/dataset/README.md"),
        })


class DatasetFileApi(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]

    @extend_schema(operation_id="dataset_file", summary="One file of the open dataset", tags=["dataset"],
                   parameters=[OpenApiParameter("name", str, OpenApiParameter.PATH,
                                                enum=list(FILES), description="The file to download.")],
                   responses={(200, "application/octet-stream"): OpenApiTypes.BINARY})
    def get(self, request: Request, name: str) -> FileResponse:
        if name not in FILES:
            raise NotFound(f"No dataset file {name!r}: GET /api/v1/dataset/ lists them ({', '.join(FILES)}).")
        directory, _ = dataset_latest(max_age_s=settings.DATASET_MAX_AGE_S)
        path = directory / name
        response = FileResponse(open(path, "rb"), as_attachment=name.endswith(".parquet"), filename=name,  # noqa: SIM115
                                content_type=CONTENT_TYPES[path.suffix])
        response["Cache-Control"] = f"public, max-age={settings.DATASET_MAX_AGE_S}"
        return response
