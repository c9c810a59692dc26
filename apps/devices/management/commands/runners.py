"""`manage.py runners [--json]`: every runner, its pool, status, heartbeat age, current job, GPU busy fraction and
telemetry."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from apps.devices.selectors import gpu_busy_text, runner_rows


def _calibration_dict(row: Any) -> dict[str, Any]:
    return {"worker": row.worker, "measured_at": row.measured_at.isoformat(), "device_model": row.device_model,
            "copy_bandwidth_gbps": row.copy_bandwidth_gbps, "matmul_fp32_tflops": row.matmul_fp32_tflops,
            "matmul_bf16_tflops": row.matmul_bf16_tflops, "reference_kernel_us": row.reference_kernel_us,
            "is_outlier": row.is_outlier}


class Command(BaseCommand):
    help = "List runners: pool, status (online, busy, draining, offline, disabled), seconds since the last " \
           "heartbeat, current job, GPU busy over the last heartbeat interval (- where not measured), telemetry " \
           "summary."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", dest="as_json", help="One JSON array on stdout.")

    def handle(self, *args: object, as_json: bool = False, **options: object) -> None:
        rows = runner_rows()
        if as_json:
            self._json(rows)
            return
        if not rows:
            self.stdout.write("No runners: create one with `manage.py create_runner --name N --pool P`.")
            return
        # BUSY: the fraction of the last heartbeat interval that the GPU ran kernels; "-": not measured.
        header = f"{'RUNNER':<20} {'POOL':<10} {'STATUS':<9} {'HEARTBEAT':>10}  {'JOB':<24} {'BUSY':<5} TELEMETRY"
        self.stdout.write(header)
        for row in rows:
            since = "never" if row["seconds_since_heartbeat"] is None else f"{row['seconds_since_heartbeat']} s"
            job = ", ".join(f"#{j['evaluation_id']} {j['problem']} ({j['stage']})" for j in row["current_job"])
            line = (f"{row['name']:<20} {row['pool']:<10} {row['status']:<9} {since:>10}  {job or '-':<24} "
                    f"{gpu_busy_text(row['gpu_busy'], compact=True):<5} {row['telemetry_summary']}")
            self.stdout.write(line)
            if row["drain_reason"]:
                self.stdout.write(f"{'':<20} drained: {row['drain_reason']}")

    def _json(self, rows: list[dict[str, Any]]) -> None:
        out = [{
            "name": row["name"], "pool": row["pool"], "status": row["status"],
            "seconds_since_heartbeat": row["seconds_since_heartbeat"], "current_job": row["current_job"],
            "telemetry_summary": row["telemetry_summary"], "telemetry": row["runner"].telemetry,
            "gpu_busy": row["gpu_busy"],
            "host_info": row["runner"].host_info, "is_draining": row["runner"].is_draining,
            "drain_reason": row["drain_reason"], "is_disabled": row["runner"].is_disabled,
            "calibrations": [_calibration_dict(c) for c in row["calibrations"]],
        } for row in rows]
        self.stdout.write(json.dumps(out, indent=2, sort_keys=True))
