# The per-minute limit on commands that store or send events counts marks of a new kind.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("workflows", "0011_payloads_in_camel_case"),
    ]

    operations = [
        migrations.AlterField(
            model_name="ratemark",
            name="kind",
            field=models.CharField(
                choices=[
                    ("round", "Round started"),
                    ("upload", "File uploaded"),
                    ("command", "Command sent"),
                ],
                max_length=16,
            ),
        ),
    ]
