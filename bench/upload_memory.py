"""Daphne's peak memory while it accepts large uploads: does it grow with the file or the chunk?

One Daphne per `--root` (the `make run` shape: SQLite in WAL mode in a temporary directory,
the in-memory channel layer), each serving the code of its root (this checkout by default;
another release unpacked with `git archive <commit> | tar -x -C /tmp/old`, run with this
checkout's Python), with uploads of up to 25 MB and no hourly upload limit. The bench signs
in, creates a workflow and sends one small upload (so that imports are not counted), then,
`--repeats` times and for each root in turn (interleaved, as the machine's load is shared):

1. one accepted upload of `--size` MB through the page's upload view (multipart, as the
   browser sends it, with the form's CSRF token);
2. `--parallel` such uploads at once.

Before each, the Daphne's peak RSS (VmHWM) is reset to its current RSS by writing 5 to
/proc/<pid>/clear_refs; after the answers (and a second for any trailing work) VmHWM is
read. Prints the RSS before and the peak increase of each case, median of the repeats;
never asserts.

    .venv/bin/python bench/upload_memory.py [--root /tmp/old --root .] [--size 19]
        [--parallel 8] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.apps import PASSWORD, free_port, wait_for_port  # noqa: E402

MB = 1024 * 1024
BOUNDARY = "----PowerOnBenchBoundary31"


@dataclass
class App:
    """One Daphne serving the code of `root`, signed in, with a workflow to upload to."""

    root: Path
    directory: Path
    process: subprocess.Popen | None = None
    base: str = ""
    cookie: str = ""
    token: str = ""
    workflow: int = 0
    single: list[tuple[int, int]] = field(default_factory=list)
    parallel: list[tuple[int, int]] = field(default_factory=list)


def app_env(directory: Path, extra: list[str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("POWERON_", "OPENAI_"))}
    env.update(
        DJANGO_SETTINGS_MODULE="poweron.settings",
        POWERON_VAR_DIR=str(directory / "var"),
        DJANGO_SUPERUSER_PASSWORD=PASSWORD,
        LOG_LEVEL="WARNING",
        POWERON_MAX_UPLOAD_BYTES=str(25 * MB),
        POWERON_MAX_UPLOADS_PER_HOUR="0",
        TMPDIR=str(directory),
    )
    env.update(item.split("=", 1) for item in extra)
    return env


def manage(root: Path, env: dict[str, str], *args: str) -> None:
    command = [sys.executable, "manage.py", *args]
    subprocess.run(command, cwd=root, env=env, check=True, capture_output=True)


def start(app: App, extra: list[str]) -> None:
    """Migrate, create "alice", start the Daphne, sign in and create a workflow."""
    import httpx

    env = app_env(app.directory, extra)
    manage(app.root, env, "migrate", "--noinput")
    manage(
        app.root, env, "createsuperuser", "--noinput", "--username", "alice", "--email", "a@x.org"
    )
    port = free_port()
    log = (app.directory / "daphne.log").open("wb")
    command = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port)]
    app.process = subprocess.Popen(
        [*command, "poweron.asgi:application"], cwd=app.root, env=env, stdout=log, stderr=log
    )
    wait_for_port(port, app.process)
    app.base = f"http://127.0.0.1:{port}"
    with httpx.Client(base_url=app.base, timeout=120, trust_env=False) as client:
        page = client.get("/login/")
        token = csrf(page.text)
        data = {"username": "alice", "password": PASSWORD, "csrfmiddlewaretoken": token}
        assert client.post("/login/", data=data).status_code == 302
        token = csrf(client.get("/").text)
        form = {"title": "Uploads", "mode": "react", "max_steps": 3, "csrfmiddlewaretoken": token}
        created = client.post("/workflows/new/", data=form)
        app.workflow = int(created.headers["location"].rstrip("/").split("/")[-1])
        app.token = csrf(client.get(f"/workflows/{app.workflow}/").text)
        app.cookie = "; ".join(f"{k}={v}" for k, v in client.cookies.items())


def csrf(html: str) -> str:
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)[1]


def body(token: str, name: str, size: int) -> bytes:
    """A multipart body as a browser sends the upload form: the CSRF token and one text
    file of `size` bytes."""
    line = b"PowerOn upload bench: a line of plain text to fill the file.\n"
    content = (line * (size // len(line) + 1))[:size]
    return b"".join([
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="csrfmiddlewaretoken"\r\n\r\n'
        f"{token}\r\n--{BOUNDARY}\r\n".encode(),
        f'Content-Disposition: form-data; name="files"; filename="{name}"\r\n'
        "Content-Type: text/plain\r\n\r\n".encode(),
        content,
        f"\r\n--{BOUNDARY}--\r\n".encode(),
    ])  # fmt: skip


def upload(app: App, data: bytes, name: str, ready: threading.Barrier | None = None) -> None:
    """Post one upload through the page's view; it must be accepted."""
    import httpx

    headers = {
        "Content-Type": f"multipart/form-data; boundary={BOUNDARY}",
        "Cookie": app.cookie,
        "Referer": f"{app.base}/workflows/{app.workflow}/",
    }
    with httpx.Client(base_url=app.base, timeout=600, trust_env=False) as client:
        if ready is not None:
            ready.wait()
        answer = client.post(
            f"/workflows/{app.workflow}/documents/upload/", content=data, headers=headers
        )
    assert answer.status_code == 200 and name in answer.text, (answer.status_code, answer.text)


def rss_kb(pid: int, name: str = "VmRSS") -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(rf"{name}:\s+(\d+) kB", status)[1])


def measure(app: App, count: int, size: int, repeat: int) -> tuple[int, int]:
    """`count` uploads of `size` bytes at once: the RSS before and the peak increase (kB)."""
    pid = app.process.pid
    names = [f"big-{repeat}-{count}-{n}.txt" for n in range(count)]
    bodies = [body(app.token, name, size) for name in names]
    ready = threading.Barrier(count + 1)
    threads = [
        threading.Thread(target=upload, args=(app, data, name, ready))
        for data, name in zip(bodies, names, strict=True)
    ]
    for thread in threads:
        thread.start()
    time.sleep(0.5)  # the clients are connected and waiting
    Path(f"/proc/{pid}/clear_refs").write_text("5")
    before = rss_kb(pid)
    ready.wait()
    for thread in threads:
        thread.join()
    time.sleep(1)
    return before, rss_kb(pid, "VmHWM") - before


def median_row(label: str, values: list[tuple[int, int]]) -> str:
    before = statistics.median(v[0] for v in values) / 1024
    increase = statistics.median(v[1] for v in values) / 1024
    each = ", ".join(f"{v[1] / 1024:.0f}" for v in values)
    return f"  {label:<26}RSS before {before:6.0f} MB   peak +{increase:5.0f} MB   ({each})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, action="append", help="the code a Daphne runs")
    parser.add_argument("--size", type=float, default=19, help="MB per file")
    parser.add_argument("--parallel", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--env", action="append", default=[], help="NAME=value for the app")
    args = parser.parse_args()
    size = int(args.size * MB)
    apps = [
        App(root.resolve(), Path(tempfile.mkdtemp(prefix="poweron-upload-memory-")))
        for root in args.root or [ROOT]
    ]
    try:
        for app in apps:
            start(app, args.env)
            upload(app, body(app.token, "warm-up.txt", 1000), "warm-up.txt")
        for repeat in range(args.repeats):
            for app in apps:
                app.single.append(measure(app, 1, size, repeat))
                app.parallel.append(measure(app, args.parallel, size, repeat))
                print(f"repeat {repeat + 1} {app.root}: {app.single[-1]} {app.parallel[-1]}")
        print(
            f"\n{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; files of "
            f"{args.size:g} MB; median of {args.repeats} (each repeat's increase in MB)"
        )
        for app in apps:
            print(app.root)
            print(median_row("1 upload", app.single))
            print(median_row(f"{args.parallel} uploads at once", app.parallel))
    finally:
        for app in apps:
            if app.process is not None:
                app.process.terminate()
                app.process.wait(timeout=30)
            shutil.rmtree(app.directory, ignore_errors=True)


if __name__ == "__main__":
    main()
