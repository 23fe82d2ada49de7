"""Throw-away PostgreSQL and Redis servers and a Codex scale-out stack on loopback.

Used by the deployment tests (``conftest.py`` beside this file) and by
``bench/bench_scale_out.py``. Everything runs from temporary directories on free
loopback ports and is stopped by the process ids this module started; nothing is
installed or left running. PostgreSQL refuses to run as root, so as root its
processes run as the ``postgres`` system user (``nobody`` when there is none).

The stack is what ``docs/deployment.md`` describes, on one machine: the instance
is ``deploy/dagster.yaml`` (PostgreSQL storage, run queue), a code server started
on its own (``deploy/workspace.yaml``), ``dagster-daemon run`` and Celery workers
(``dagster-celery worker start -y deploy/celery.yaml``), with ``CODEX_EXECUTOR=celery``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import glob
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
BIN = Path(sys.executable).parent
LOOPBACK = "127.0.0.1"
ONE_THREAD = {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "NUMEXPR_NUM_THREADS": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "CODEX_REDIRECT_THREADS": "1",
}
DONE_BACKFILL = {"COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED"}


class ServiceError(RuntimeError):
    """A server or process of the stack did not start or answer."""


# --------------------------------------------------------------------------- discovery


def postgres_bindir() -> Path | None:
    """The newest ``/usr/lib/postgresql/<version>/bin`` that has initdb and postgres."""
    found = []
    for d in glob.glob("/usr/lib/postgresql/*/bin"):
        p = Path(d)
        if (p / "initdb").is_file() and (p / "postgres").is_file():
            try:
                found.append((int(p.parent.name.split(".")[0]), p))
            except ValueError:
                continue
    return max(found)[1] if found else None


def redis_server_bin() -> str | None:
    return shutil.which("redis-server")


def missing_prerequisites() -> list[str]:
    """What this machine lacks to run the stack (empty when everything is there)."""
    missing = []
    if postgres_bindir() is None:
        missing.append("PostgreSQL (/usr/lib/postgresql/*/bin/initdb)")
    if redis_server_bin() is None:
        missing.append("redis-server")
    for module in ("dagster_postgres", "dagster_celery", "celery", "redis", "psycopg2"):
        try:
            __import__(module)
        except ImportError:
            missing.append(f"the Python package {module}")
    if os.geteuid() == 0 and _service_user() is None:
        missing.append("a non-root user (postgres or nobody) to run PostgreSQL as")
    return missing


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def _service_user() -> tuple[int, int] | None:
    for name in ("postgres", "nobody"):
        try:
            pw = pwd.getpwnam(name)
        except KeyError:
            continue
        return pw.pw_uid, pw.pw_gid
    return None


# --------------------------------------------------------------------------- processes


@dataclass
class Proc:
    """A child process in its own session, with its output in a log file."""

    name: str
    popen: subprocess.Popen
    log_path: Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return f"(no log for {self.name})"
        return "\n".join(text.splitlines()[-lines:])

    def kill_group(self, sig: int = signal.SIGKILL) -> None:
        """Signal the whole process group this child leads (it and what it started)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, sig)

    def stop(self, grace_s: float = 15.0, first: int = signal.SIGTERM) -> None:
        """``first`` to the group, then SIGKILL after ``grace_s``; reaps the leader."""

        def group_alive() -> bool:
            self.popen.poll()
            try:
                os.killpg(self.popen.pid, 0)
                return True
            except ProcessLookupError:
                return False
            except PermissionError:
                return True

        if group_alive():
            self.kill_group(first)
            deadline = time.monotonic() + grace_s
            while group_alive() and time.monotonic() < deadline:
                time.sleep(0.2)
        if group_alive():
            self.kill_group(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=10)


def spawn(
    name: str,
    args: Sequence[str],
    log_path: Path,
    env: Mapping[str, str],
    cwd: Path | None = None,
    user: tuple[int, int] | None = None,
) -> Proc:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    extra: dict[str, Any] = {}
    if user is not None:
        extra = {"user": user[0], "group": user[1], "extra_groups": []}
    with log_path.open("ab") as log:
        popen = subprocess.Popen(
            list(args),
            cwd=str(cwd or REPO),
            env=dict(env),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            **extra,
        )
    return Proc(name, popen, log_path)


def wait_until(what: str, probe, timeout_s: float, proc: Proc | None = None, every_s: float = 0.5) -> Any:
    """Call ``probe`` until it returns something truthy; fail with the last error and log tail."""
    deadline = time.monotonic() + timeout_s
    last: object = "no answer"
    while time.monotonic() < deadline:
        if proc is not None and not proc.alive():
            raise ServiceError(f"{proc.name} exited with {proc.popen.returncode} before {what}:\n{proc.log_tail()}")
        try:
            got = probe()
            if got:
                return got
            last = got
        except Exception as exc:  # any failure to answer: try again until the deadline
            last = repr(exc)
        time.sleep(every_s)
    tail = f"\n{proc.name} log:\n{proc.log_tail()}" if proc is not None else ""
    raise ServiceError(f"timed out after {timeout_s:.0f}s waiting for {what} ({last}){tail}")


# --------------------------------------------------------------------------- servers


@dataclass
class Postgres:
    """A PostgreSQL server on loopback with trust authentication, in a temp dir."""

    port: int
    user: str
    root: Path
    proc: Proc

    def connect(self, db: str = "postgres"):
        import psycopg2

        return psycopg2.connect(host=LOOPBACK, port=self.port, user=self.user, dbname=db, connect_timeout=5)

    def create_database(self, name: str) -> str:
        con = self.connect()
        try:
            con.autocommit = True
            with con.cursor() as cur:
                cur.execute(f'CREATE DATABASE "{name}"')
        finally:
            con.close()
        return name

    def query(self, db: str, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        con = self.connect(db)
        try:
            with con.cursor() as cur:
                cur.execute(sql, params)
                return list(cur.fetchall())
        finally:
            con.close()

    def env(self, db: str) -> dict[str, str]:
        """The variables ``deploy/dagster.yaml`` reads."""
        return {
            "DAGSTER_PG_HOST": LOOPBACK,
            "DAGSTER_PG_PORT": str(self.port),
            "DAGSTER_PG_DB": db,
            "DAGSTER_PG_USERNAME": self.user,
            "DAGSTER_PG_PASSWORD": "",
        }


@contextlib.contextmanager
def postgres_server(user: str = "codex", timeout_s: float = 60.0) -> Iterator[Postgres]:
    """initdb + postgres on a free loopback port; stopped (fast shutdown) and removed on exit."""
    bindir = postgres_bindir()
    if bindir is None:
        raise ServiceError("PostgreSQL is not installed (bash scripts/install_services.sh)")
    run_as = _service_user() if os.geteuid() == 0 else None
    root = Path(tempfile.mkdtemp(prefix="codex-pg-"))
    data, sockets = root / "data", root / "sockets"
    sockets.mkdir()
    if run_as is not None:
        for p in (root, sockets):
            os.chown(p, *run_as)
    env = {"PATH": os.environ.get("PATH", ""), "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8", "HOME": str(root)}
    extra: dict[str, Any] = {"user": run_as[0], "group": run_as[1], "extra_groups": []} if run_as else {}
    proc = None
    try:
        subprocess.run(
            [str(bindir / "initdb"), "-D", str(data), "-U", user, "-A", "trust", "-E", "UTF8", "--no-sync", "--locale=C"],
            cwd=root, env=env, check=True, capture_output=True, timeout=120, **extra,
        )
        port = free_port()
        proc = spawn(
            "postgres",
            [
                str(bindir / "postgres"), "-D", str(data), "-h", LOOPBACK, "-p", str(port), "-k", str(sockets),
                "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
                "-c", "max_connections=300", "-c", "shared_buffers=64MB",
            ],
            root / "postgres.log", env, cwd=root, user=run_as,
        )
        pg = Postgres(port, user, root, proc)
        wait_until("PostgreSQL to accept connections", lambda: pg.connect().close() or True, timeout_s, proc)
        yield pg
    except subprocess.CalledProcessError as exc:
        raise ServiceError(f"initdb failed: {exc.stderr.decode(errors='replace')}") from exc
    finally:
        if proc is not None:
            proc.stop(grace_s=20, first=signal.SIGINT)  # SIGINT: PostgreSQL's fast shutdown
        shutil.rmtree(root, ignore_errors=True)


@dataclass
class Redis:
    port: int
    proc: Proc

    def url(self, db: int = 0) -> str:
        return f"redis://{LOOPBACK}:{self.port}/{db}"


@contextlib.contextmanager
def redis_server(timeout_s: float = 30.0) -> Iterator[Redis]:
    """redis-server on a free loopback port, no persistence; stopped on exit."""
    exe = redis_server_bin()
    if exe is None:
        raise ServiceError("redis-server is not installed (bash scripts/install_services.sh)")
    import redis

    root = Path(tempfile.mkdtemp(prefix="codex-redis-"))
    proc = None
    try:
        port = free_port()
        proc = spawn(
            "redis-server",
            [exe, "--port", str(port), "--bind", LOOPBACK, "--dir", str(root), "--save", "", "--appendonly", "no",
             "--protected-mode", "no", "--daemonize", "no"],
            root / "redis.log", dict(os.environ), cwd=root,
        )
        server = Redis(port, proc)
        wait_until("Redis to answer PING", lambda: redis.Redis(host=LOOPBACK, port=port, socket_timeout=2).ping(), timeout_s, proc)
        yield server
    finally:
        if proc is not None:
            proc.stop(grace_s=10)
        shutil.rmtree(root, ignore_errors=True)


# --------------------------------------------------------------------------- the stack


def _merged(base: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``overrides`` merged in, nested mappings key by key."""
    out = dict(base)
    for key, value in overrides.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _merged(out[key], value)
        else:
            out[key] = value
    return out


def celery_yaml(dest: Path, **overrides: Any) -> Path:
    """``deploy/celery.yaml`` with ``config_source`` settings overridden (e.g. a short visibility timeout)."""
    cfg = yaml.safe_load((DEPLOY / "celery.yaml").read_text())
    config = cfg["execution"]["config"]
    config["config_source"] = _merged(config.get("config_source") or {}, overrides)
    dest.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return dest


@dataclass
class ScaleOutStack:
    """Code server, daemon and Celery workers over one PostgreSQL database and one Redis."""

    root: Path
    pg: Postgres
    db: str
    redis: Redis
    data_dir: Path
    celery_config: Path
    extra_env: dict[str, str] = field(default_factory=dict)
    instance_overrides: dict[str, Any] = field(default_factory=dict)  # merged into deploy/dagster.yaml
    code_server_port: int = 0
    code_server: Proc | None = None
    daemon: Proc | None = None
    workers: dict[str, Proc] = field(default_factory=dict)

    @property
    def home(self) -> Path:
        return self.root / "dagster_home"

    @property
    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        for var in ("CODEX_EXECUTOR", "CODEX_EMBEDDER", *ONE_THREAD):
            env.pop(var, None)
        env.update(self.pg.env(self.db))
        env.update(
            DAGSTER_HOME=str(self.home),
            CODEX_DATA_DIR=str(self.data_dir),
            CODEX_EXECUTOR="celery",
            CODEX_EXECUTOR_CONFIG=str(self.celery_config),
            CODEX_CELERY_BROKER=self.redis.url(0),
            CODEX_CELERY_BACKEND=self.redis.url(1),
            CODEX_CODE_SERVER_HOST=LOOPBACK,
            CODEX_CODE_SERVER_PORT=str(self.code_server_port),
            PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            PYTHONUNBUFFERED="1",
        )
        env.update(self.extra_env)
        return env

    # ---------------------------------------------------------------- start / stop

    def start(self, workers: Mapping[str, Mapping[str, str]], timeout_s: float = 240.0) -> None:
        """Start the code server, the daemon and the named workers; wait until all answer."""
        self.home.mkdir(parents=True, exist_ok=True)
        if self.instance_overrides:
            instance = yaml.safe_load((DEPLOY / "dagster.yaml").read_text())
            (self.home / "dagster.yaml").write_text(yaml.safe_dump(_merged(instance, self.instance_overrides), sort_keys=False))
        else:
            shutil.copy(DEPLOY / "dagster.yaml", self.home / "dagster.yaml")
        self.code_server_port = free_port()
        logs = self.root / "logs"
        # Create the schema once, before many processes race to create it on first connect
        # (docs/deployment.md: `dagster instance migrate` before starting the fleet).
        migrated = subprocess.run(
            [str(BIN / "dagster"), "instance", "migrate"], env=self.env, cwd=REPO, capture_output=True, text=True, timeout=300
        )
        if migrated.returncode:
            raise ServiceError(f"dagster instance migrate failed:\n{migrated.stdout}\n{migrated.stderr}")
        self.code_server = spawn(
            "code server",
            [str(BIN / "dagster"), "code-server", "start", "-h", LOOPBACK, "-p", str(self.code_server_port),
             "-m", "codex_pipeline.defs", "--location-name", "codex"],
            logs / "code_server.log", self.env,
        )
        for name, env in workers.items():
            self.start_worker(name, env)
        wait_until("the code server to load the codex location", self._code_server_loaded, timeout_s, self.code_server, every_s=1.0)
        self.daemon = spawn(
            "daemon",
            [str(BIN / "dagster-daemon"), "run", "-w", str(DEPLOY / "workspace.yaml")],
            logs / "daemon.log", self.env,
        )
        self.wait_workers(list(workers), timeout_s)

    def start_worker(self, name: str, env: Mapping[str, str] | None = None) -> Proc:
        """``dagster-celery worker start`` with the solo pool: one process, one step at a time.

        ``-i codex_pipeline.defs`` imports the code location when the worker starts, not
        on its first step.
        """
        proc = spawn(
            f"worker {name}",
            [str(BIN / "dagster-celery"), "worker", "start", "-A", "dagster_celery.app", "-y", str(self.celery_config),
             "-n", name, "-i", "codex_pipeline.defs", "--", "--pool=solo"],
            self.root / "logs" / f"worker-{name}.log", {**self.env, **(env or {})},
        )
        self.workers[name] = proc
        return proc

    def wait_workers(self, names: Sequence[str], timeout_s: float = 240.0) -> None:
        def answered() -> bool:
            replies = self.celery_app().control.ping(timeout=2.0)
            seen = {host.split("@")[0] for reply in replies for host in reply}
            for name in names:
                if not self.workers[name].alive():
                    raise ServiceError(f"worker {name} exited:\n{self.workers[name].log_tail()}")
            return set(names) <= seen

        wait_until(f"Celery workers {', '.join(names)} to answer a ping", answered, timeout_s, every_s=1.0)

    def stop(self, grace_s: float = 15.0) -> None:
        """SIGTERM every process group at once, then SIGKILL what is left after ``grace_s``."""
        procs = [p for p in [self.daemon, *self.workers.values(), self.code_server] if p is not None]
        for proc in procs:
            proc.kill_group(signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        for proc in procs:
            proc.stop(grace_s=max(0.0, deadline - time.monotonic()))

    def _code_server_loaded(self) -> bool:
        from dagster._grpc.client import DagsterGrpcClient

        client = DagsterGrpcClient(port=self.code_server_port, host=LOOPBACK)
        return "codex" in json.dumps(client.list_repositories())

    def celery_app(self):
        from dagster_celery.executor import CeleryExecutor
        from dagster_celery.make_app import make_app

        cfg = yaml.safe_load(self.celery_config.read_text())["execution"]["config"]
        return make_app(
            CeleryExecutor.for_cli(
                broker=self.redis.url(0), backend=self.redis.url(1), config_source=cfg.get("config_source")
            ).app_args()
        )

    # ---------------------------------------------------------------- Dagster side

    @contextlib.contextmanager
    def instance(self) -> Iterator[Any]:
        """The stack's DagsterInstance (deploy/dagster.yaml on PostgreSQL) in this process."""
        import dagster as dg

        with patched_environ(self.env):
            with dg.DagsterInstance.from_config(str(self.home)) as inst:
                yield inst

    def launch_backfill(self, asset_keys: Sequence[Sequence[str]], partitions: Sequence[str], title: str = "") -> str:
        """Launch an asset backfill as the UI does (the launchPartitionBackfill mutation)."""
        from dagster._core.workspace.context import WorkspaceProcessContext
        from dagster._core.workspace.load_target import WorkspaceFileTarget
        from dagster_graphql.test.utils import execute_dagster_graphql

        mutation = """
        mutation($params: LaunchBackfillParams!) {
          launchPartitionBackfill(backfillParams: $params) {
            __typename
            ... on LaunchBackfillSuccess { backfillId }
            ... on PythonError { message stack }
            ... on InvalidStepError { invalidStepKey }
            ... on InvalidOutputError { stepKey invalidOutputName }
            ... on UnauthorizedError { message }
            ... on PartitionSetNotFoundError { message }
          }
        }"""
        params = {
            "partitionNames": list(partitions),
            "assetSelection": [{"path": list(k)} for k in asset_keys],
            "fromFailure": False,
            "title": title or None,
        }
        with self.instance() as inst, patched_environ(self.env):
            with WorkspaceProcessContext(inst, WorkspaceFileTarget(paths=[str(DEPLOY / "workspace.yaml")])) as pc:
                result = execute_dagster_graphql(pc.create_request_context(), mutation, variables={"params": params})
        answer = result.data["launchPartitionBackfill"] if result.data else None
        if not answer or answer["__typename"] != "LaunchBackfillSuccess":
            raise ServiceError(f"launchPartitionBackfill failed: {answer or result.errors}")
        return answer["backfillId"]

    def wait_backfill(self, backfill_id: str, timeout_s: float, poll_s: float = 2.0) -> Any:
        """Poll until the backfill is done; returns the PartitionBackfill."""
        with self.instance() as inst:
            deadline = time.monotonic() + timeout_s
            while True:
                backfill = inst.get_backfill(backfill_id)
                if backfill is not None and backfill.status.value in DONE_BACKFILL:
                    return backfill
                for proc in [self.daemon, self.code_server]:
                    if proc is not None and not proc.alive():
                        raise ServiceError(f"{proc.name} died during backfill {backfill_id}:\n{proc.log_tail()}")
                if time.monotonic() > deadline:
                    raise ServiceError(
                        f"backfill {backfill_id} not done after {timeout_s:.0f}s "
                        f"(status {backfill.status.value if backfill else None}); daemon log:\n"
                        f"{self.daemon.log_tail() if self.daemon else ''}"
                    )
                time.sleep(poll_s)

    def backfill_runs(self, backfill_id: str) -> list[Any]:
        import dagster as dg

        with self.instance() as inst:
            return list(inst.get_runs(filters=dg.RunsFilter.for_backfill(backfill_id)))

    def submit_run(self, asset_keys: Sequence[Sequence[str]], partition: str, tags: Mapping[str, str] | None = None) -> str:
        """Queue a run of the implicit asset job for one partition, as the UI's Materialize does."""
        from dagster._core.workspace.context import WorkspaceProcessContext
        from dagster._core.workspace.load_target import WorkspaceFileTarget
        from dagster_graphql.test.utils import execute_dagster_graphql

        mutation = """
        mutation($params: ExecutionParams!) {
          launchPipelineExecution(executionParams: $params) {
            __typename
            ... on LaunchRunSuccess { run { runId } }
            ... on PythonError { message stack }
            ... on RunConfigValidationInvalid { errors { message } }
            ... on InvalidSubsetError { message }
          }
        }"""
        all_tags = {"dagster/partition": partition, **(tags or {})}
        params = {
            "selector": {
                "repositoryLocationName": "codex",
                "repositoryName": "__repository__",
                "pipelineName": "__ASSET_JOB",
                "assetSelection": [{"path": list(k)} for k in asset_keys],
            },
            "runConfigData": {},
            "executionMetadata": {"tags": [{"key": k, "value": v} for k, v in all_tags.items()]},
        }
        with self.instance() as inst, patched_environ(self.env):
            with WorkspaceProcessContext(inst, WorkspaceFileTarget(paths=[str(DEPLOY / "workspace.yaml")])) as pc:
                result = execute_dagster_graphql(pc.create_request_context(), mutation, variables={"params": params})
        answer = result.data["launchPipelineExecution"] if result.data else None
        if not answer or answer["__typename"] != "LaunchRunSuccess":
            raise ServiceError(f"launchPipelineExecution failed: {answer or result.errors}")
        return answer["run"]["runId"]

    def wait_run(self, run_id: str, timeout_s: float, poll_s: float = 1.0) -> Any:
        import dagster as dg

        with self.instance() as inst:
            deadline = time.monotonic() + timeout_s
            while True:
                run = inst.get_run_by_id(run_id)
                if run is not None and run.status in (dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED):
                    return run
                if time.monotonic() > deadline:
                    raise ServiceError(f"run {run_id} not done after {timeout_s:.0f}s (status {run.status if run else None})")
                time.sleep(poll_s)


@contextlib.contextmanager
def patched_environ(values: Mapping[str, str]) -> Iterator[None]:
    """Set ``values`` in os.environ for the block (instance config reads env vars on load)."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(values)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def scale_out_stack(
    root: Path,
    pg: Postgres,
    redis: Redis,
    data_dir: Path,
    workers: Mapping[str, Mapping[str, str]],
    celery_overrides: Mapping[str, Any] | None = None,
    extra_env: Mapping[str, str] | None = None,
    instance_overrides: Mapping[str, Any] | None = None,
) -> Iterator[ScaleOutStack]:
    """A started stack on a fresh database; every process stopped on exit."""
    root.mkdir(parents=True, exist_ok=True)
    db = pg.create_database("dagster_" + uuid.uuid4().hex[:8])
    stack = ScaleOutStack(
        root=root, pg=pg, db=db, redis=redis, data_dir=data_dir,
        celery_config=celery_yaml(root / "celery.yaml", **dict(celery_overrides or {})),
        extra_env=dict(extra_env or {}), instance_overrides=dict(instance_overrides or {}),
    )
    try:
        stack.start(workers)
        yield stack
    finally:
        stack.stop()


def day_range(first: str, days: int) -> list[str]:
    start = dt.date.fromisoformat(first)
    return [(start + dt.timedelta(days=i)).isoformat() for i in range(days)]
