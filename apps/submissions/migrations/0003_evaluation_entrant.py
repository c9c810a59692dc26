import django.db.models.deletion
from django.db import migrations, models
from django.db.models import OuterRef, Subquery


def copy_entrants(apps, schema_editor):
    """Every existing evaluation gets its submission's entrant (one UPDATE)."""
    Evaluation = apps.get_model("submissions", "Evaluation")
    Submission = apps.get_model("submissions", "Submission")
    Evaluation.objects.filter(entrant__isnull=True).update(
        entrant=Subquery(Submission.objects.filter(pk=OuterRef("submission_id")).values("entrant_id")[:1]))


class Migration(migrations.Migration):

    dependencies = [
        ("devices", "0002_audit_log_calibration"),
        ("submissions", "0002_evaluation_queued_at"),
    ]

    operations = [
        migrations.AddField(
            model_name="evaluation",
            name="entrant",
            field=models.ForeignKey(blank=True, db_index=False, null=True,
                                    on_delete=django.db.models.deletion.PROTECT, related_name="+",
                                    to="submissions.entrant"),
        ),
        migrations.RunPython(copy_entrants, migrations.RunPython.noop),
        migrations.AddIndex(
            model_name="evaluation",
            index=models.Index(fields=["entrant", "-queued_at"], name="evaluation_entrant_recent"),
        ),
    ]
