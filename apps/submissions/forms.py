"""Forms of the site's pages. Every error says what to do about it."""

from __future__ import annotations

from django import forms
from django.conf import settings

from apps.devices.models import HardwarePool
from apps.submissions.ane import package_source, package_too_big_message
from apps.submissions.models import Entrant, Problem, Submission
from gpu_runner import workdir as agent_workdir

SOURCE_PLACEHOLDER = (
    "import torch\nimport torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n\n"
    "class ModelNew(nn.Module):\n    ...\n"
)


class SubmitForm(forms.Form):
    entrant = forms.ModelChoiceField(
        queryset=Entrant.objects.none(),
        required=False,
        help_text="The name your submission ranks under.",
        error_messages={"invalid_choice": "Pick one of your own entrants.",
                        "required": "Pick the entrant this submission ranks under."},
    )
    problem = forms.ModelChoiceField(
        queryset=Problem.objects.filter(is_active=True),
        to_field_name="slug",
        required=False,
        help_text="For a CUDA Agent workdir, left empty, the problem whose file its model.py is.",
        error_messages={"invalid_choice": "No such problem: pick one from the list.",
                        "required": "Pick the problem your kernel solves."},
    )
    pool = forms.ModelChoiceField(
        queryset=HardwarePool.objects.filter(is_active=True),
        to_field_name="slug",
        label="Track (hardware pool)",
        error_messages={"invalid_choice": "No such track: pick one from the list.",
                        "required": "Pick the hardware your kernel should run on."},
    )
    language = forms.ChoiceField(
        choices=[("", "Detect from the source")] + Submission.LANGUAGE_CHOICES,
        required=False,
        help_text="Left on detect, the language is read from the source (load_inline, triton.jit, cupy).",
    )
    source = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 22, "spellcheck": "false", "placeholder": SOURCE_PLACEHOLDER}),
        required=False,
        strip=False,
        label="Source",
        help_text="A Python file defining class ModelNew (KernelBench format).",
    )
    source_file = forms.FileField(required=False, label="…or upload the .py file",
                                  help_text="On an ANE track (…-ane), a zipped .mlpackage too. On a GPU or CPU "
                                            "track, a CUDA Agent workdir as .zip or .tar.gz (model.py, "
                                            "model_new.py, binding.cpp, kernels/).")
    rules = forms.ChoiceField(
        choices=[("", "CUDA Agent rules (a workdir's default)")] + [
            (k, v) for k, v in agent_workdir.RULE_SETS.items() if k != agent_workdir.RULES_CUDA_AGENT],
        required=False, label="Rule set (workdirs)",
        help_text="CUDA Agent's rules allow cuBLAS for a GEMM and cuDNN for a convolution, and no other library.",
    )

    def __init__(self, *args: object, entrants: list[Entrant], **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        # Labels for people; the submitted values stay slugs and ids.
        self.fields["problem"].label_from_instance = (  # type: ignore[attr-defined]
            lambda p: f"L{p.level} · {p.title} ({p.slug})"
        )
        self.fields["pool"].label_from_instance = lambda p: f"{p.slug}: {p.name}"  # type: ignore[attr-defined]
        field = self.fields["entrant"]
        field.label_from_instance = lambda e: f"{e.name} ({e.get_kind_display()})"  # type: ignore[attr-defined]
        field.queryset = Entrant.objects.filter(pk__in=[e.pk for e in entrants])  # type: ignore[attr-defined]
        human = next((e for e in entrants if e.kind == Entrant.KIND_HUMAN), None)
        if human is not None:
            field.empty_label = None  # type: ignore[attr-defined]
            field.initial = human.pk
        else:
            # Left empty (here or in a scripted POST), the view uses or creates the user's own human entrant.
            field.empty_label = "Yourself (a new human entrant)"  # type: ignore[attr-defined]
            field.help_text = "“Yourself” creates an entrant of kind human named after your username."

    def clean(self) -> dict:
        data = super().clean() or {}
        text = data.get("source") or ""
        upload = data.get("source_file")
        if text.strip() and upload:
            raise forms.ValidationError("Give the source once: paste it or upload a file, not both.")
        pool = data.get("pool")
        is_ane = pool is not None and pool.kind == HardwarePool.KIND_ANE
        if upload and agent_workdir.looks_like_archive_name(upload.name) and not is_ane:
            # A CUDA Agent workdir: checked and read by the service (gpu_runner/workdir.py), never unpacked to disk.
            if upload.size > agent_workdir.MAX_ARCHIVE_BYTES:
                self.add_error("source_file", f"The workdir archive is {upload.size:,} bytes; the limit is "
                                              f"{agent_workdir.MAX_ARCHIVE_BYTES:,}. Archive the sources only.")
                return data
            data["workdir_archive"] = upload.read(agent_workdir.MAX_ARCHIVE_BYTES + 1)
            return data
        if not data.get("problem"):
            if "problem" not in self.errors:
                self.add_error("problem", "Pick the problem your kernel solves.")
            return data
        if upload and upload.name.lower().endswith(".zip"):
            # A zipped .mlpackage for an ANE track: stored as `base64:<zip>` (apps/submissions/ane.py).
            if upload.size > settings.MAX_PACKAGE_BYTES:
                self.add_error("source_file", package_too_big_message(upload.size))
                return data
            data["source_text"] = package_source(upload.read())
            return data
        if upload:
            if upload.size > settings.MAX_SOURCE_BYTES:
                self.add_error("source_file", self._too_big(upload.size))
                return data
            try:
                text = upload.read().decode("utf-8")
            except UnicodeDecodeError:
                self.add_error("source_file", "The file is not UTF-8 text: upload your solution's .py file.")
                return data
        if not text.strip():
            self.add_error("source", "The source is empty: paste your ModelNew solution or upload its file.")
            return data
        size = len(text.encode("utf-8"))
        if size > settings.MAX_SOURCE_BYTES:
            self.add_error("source", self._too_big(size))
            return data
        # Browsers send a textarea's lines ending in CRLF: store the file's text as an API client would send
        # it, so the same solution has one hash (deduplication) whichever way it came.
        data["source_text"] = text.replace("\r\n", "\n")
        return data

    @staticmethod
    def _too_big(size: int) -> str:
        return (f"The source is {size:,} bytes; the limit is {settings.MAX_SOURCE_BYTES:,}. "
                "Remove unused code or comments.")

    # SubmissionError.fields uses the API's names; the form's fields are named for people.
    _SERVICE_FIELDS = {"problem": "problem", "hardware": "pool", "pool": "pool", "language": "language",
                       "source": "source", "entrant": "entrant",
                       "workdir": "source_file", "rules": "rules"}

    def add_service_error(self, error: Exception) -> None:
        """Show a services.SubmissionError beside the fields it names."""
        fields = getattr(error, "fields", None) or {}
        for key, value in fields.items():
            target = self._SERVICE_FIELDS.get(key)
            for msg in value if isinstance(value, list | tuple) else [value]:
                self.add_error(target, str(msg))
        if not fields:
            self.add_error(None, getattr(error, "message", "") or str(error))
        retry_after = getattr(error, "retry_after", None)
        if retry_after:
            self.add_error(None, f"Try again in {int(retry_after)} seconds.")


class EntrantCreateForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="Shown on the leaderboards, e.g. “my-rl-agent-v2”.")
    kind = forms.ChoiceField(
        choices=[c for c in Entrant.KIND_CHOICES if c[0] != Entrant.KIND_BASELINE],
        help_text="Baselines are the site's own (PyTorch eager, torch.compile).",
    )
    model_name = forms.CharField(max_length=100, required=False, help_text="For an LLM or agent, e.g. “Claude Opus”.")
    model_version = forms.CharField(max_length=100, required=False)

    def clean_name(self) -> str:
        name = self.cleaned_data["name"].strip()
        if Entrant.objects.filter(name__iexact=name).exists():
            raise forms.ValidationError(f"An entrant named “{name}” exists already: pick another name.")
        return name
