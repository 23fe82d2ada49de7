"""The Dagster UI, end to end, in a real browser.

A data engineer's first session: `dagster dev` on a fresh instance (the project's
`dagster.yaml`, sample landing data), every dataset's assets in the catalog, a backfill of
three days of one dataset launched from the UI, and the backfill seen succeeding, then
confirmed through the instance and on disk. Headless Debian chromium is driven by
playwright; `playwright install` is never used (no download host is reachable).
"""

import datetime as dt
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import dagster as dg
import pytest

from codex_pipeline.datasets.registry import default_registry
from codex_pipeline.datasets.sample_data import install_sample_landing
from codex_pipeline.warehouse.storage import Warehouse

pytestmark = pytest.mark.ui

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
BACKFILL_DATASET = "narrative"
BACKFILL_DAYS = ["2026-11-24", "2026-11-25", "2026-11-26"]
CONTRACT_CHECK = "chunk_contract"
SERVER_START_TIMEOUT_S = 240  # dagster dev + code location load on a busy 2-core box
BACKFILL_TIMEOUT_S = 480  # raw+chunks, then embeddings (a model load) per partition; ~3.5 min seen
UI_TIMEOUT_MS = 60_000  # default for every playwright wait: the React app is slow under load
FAILED_BACKFILL_STATES = {"Failed", "Failing", "Canceled", "Canceling"}


# --------------------------------------------------------------------------- prerequisites


def _require_browser() -> None:
    """Skip without chromium or playwright; with CI=true that is a failure instead."""
    missing = []
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("the Python package `playwright` (pip install -e '.[dev]')")
    if not CHROMIUM.exists():
        missing.append(f"{CHROMIUM} (run `bash scripts/install_browser.sh`)")
    if not missing:
        return
    reason = "the Dagster UI browser test needs " + " and ".join(missing)
    if os.environ.get("CI") == "true":
        pytest.fail(reason + " — CI=true, so this is a failure, not a skip")
    pytest.skip(reason)


def expected_assets() -> dict[str, list[dg.AssetKey]]:
    """Materializable asset keys per asset group, from the code location itself.

    Derived from the asset graph rather than hard-coded, so assets added later (embeddings,
    new datasets) are expected in the UI too; checked against the registry for the core pair.
    """
    from codex_pipeline.defs import defs

    graph = defs.resolve_asset_graph()
    groups: dict[str, list[dg.AssetKey]] = {}
    for key in sorted(graph.get_all_asset_keys(), key=lambda k: k.to_user_string()):
        node = graph.get(key)
        if node.is_materializable:
            groups.setdefault(node.group_name, []).append(key)
    for spec in default_registry():
        want = [dg.AssetKey([spec.name, "raw"])] + ([dg.AssetKey([spec.name, "chunks"])] if spec.chunked else [])
        missing = [k.to_user_string() for k in want if k not in groups.get(spec.name, [])]
        assert not missing, f"registry dataset {spec.name!r} lacks assets in the graph: {missing}"
    return groups


# --------------------------------------------------------------------------- dagster dev


@dataclass
class DagsterDev:
    url: str
    home: Path
    data: Path
    log_path: Path
    proc: subprocess.Popen

    def log_tail(self, lines: int = 60) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no dagster dev log)"
        return "\n".join(text.splitlines()[-lines:])

    def graphql(self, query: str, timeout: float = 10.0) -> dict:
        req = urllib.request.Request(
            f"{self.url}/graphql",
            data=json.dumps({"query": query}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.load(resp)

    def wait_ready(self, timeout_s: float) -> None:
        """Wait until the webserver answers and the `codex` code location has loaded."""
        query = """{ workspaceOrError { __typename ... on Workspace { locationEntries {
            name loadStatus locationOrLoadError { __typename ... on PythonError { message } } } } } }"""
        deadline = time.monotonic() + timeout_s
        last = "no answer yet"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"dagster dev exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                ws = self.graphql(query)["data"]["workspaceOrError"]
                entries = {e["name"]: e for e in ws.get("locationEntries", [])}
                entry = entries.get("codex")
                if entry and entry["loadStatus"] == "LOADED":
                    loaded = entry["locationOrLoadError"] or {}
                    if loaded.get("__typename") == "RepositoryLocation":
                        return
                    pytest.fail(f"code location `codex` failed to load: {loaded.get('message', loaded)}")
                last = f"workspace: {json.dumps(ws)[:300]}"
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError, KeyError, ValueError) as exc:
                last = repr(exc)
            time.sleep(1.0)
        pytest.fail(f"dagster dev not ready after {timeout_s:.0f}s ({last}):\n{self.log_tail()}")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _dagster_cli() -> str:
    beside = Path(sys.executable).with_name("dagster")
    found = str(beside) if beside.exists() else shutil.which("dagster")
    if not found:
        pytest.fail("the `dagster` command is not installed next to this Python")
    return found


def _stop_process_group(proc: subprocess.Popen, grace_s: float = 10.0) -> None:
    """SIGTERM the whole group (webserver, daemon, code servers, run workers), then SIGKILL."""
    pgid = proc.pid  # start_new_session=True made the child a group leader

    def group_alive() -> bool:
        proc.poll()  # reap the leader so a zombie does not keep the group "alive"
        try:
            os.killpg(pgid, 0)
            return True
        except ProcessLookupError:
            return False
        except PermissionError:
            return True

    if group_alive():
        try:
            os.killpg(pgid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + grace_s
        while group_alive() and time.monotonic() < deadline:
            time.sleep(0.5)
    if group_alive():
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


@pytest.fixture
def browser_ready() -> None:
    _require_browser()


@pytest.fixture
def dagster_dev(browser_ready: None, tmp_path: Path) -> Iterator[DagsterDev]:
    """`dagster dev` on loopback with a fresh instance (the project's dagster.yaml) and data dir."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(REPO / "dagster.yaml", home / "dagster.yaml")
    data = tmp_path / "data"
    install_sample_landing(Warehouse(data))
    port = _free_port()
    env = dict(os.environ, DAGSTER_HOME=str(home), CODEX_DATA_DIR=str(data), PYTHONUNBUFFERED="1")
    log_path = tmp_path / "dagster_dev.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [_dagster_cli(), "dev", "--host", "127.0.0.1", "--port", str(port)],
            cwd=REPO,  # workspace.yaml loads the `codex` code location
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    server = DagsterDev(f"http://127.0.0.1:{port}", home, data, log_path, proc)
    try:
        started = time.monotonic()
        server.wait_ready(SERVER_START_TIMEOUT_S)
        print(f"\n[ui] dagster dev ready in {time.monotonic() - started:.1f}s", flush=True)
        yield server
    finally:
        stopping = time.monotonic()
        _stop_process_group(proc)
        print(f"[ui] dagster dev stopped in {time.monotonic() - stopping:.1f}s", flush=True)


@pytest.fixture
def page(browser_ready: None):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            context = browser.new_context(viewport={"width": 1600, "height": 1000})
            pg = context.new_page()
            pg.set_default_timeout(UI_TIMEOUT_MS)
            yield pg
        finally:
            browser.close()


# --------------------------------------------------------------------------- UI helpers


class Steps:
    """Names each UI step; on failure saves a screenshot and the dagster dev log tail."""

    def __init__(self, page, server: DagsterDev, out_dir: Path) -> None:
        self.page, self.server, self.out_dir, self.n = page, server, out_dir, 0

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        self.n += 1
        started = time.monotonic()
        try:
            yield
        except BaseException:
            shot = self.out_dir / f"ui-failure-{self.n:02d}-{re.sub(r'[^a-z0-9]+', '-', name.lower())}.png"
            try:
                self.page.screenshot(path=str(shot), full_page=True)
                print(f"\n[ui] step {self.n} '{name}' failed at {self.page.url}; screenshot: {shot}", flush=True)
            except Exception as exc:  # the page may be gone; the log still helps
                print(f"\n[ui] step {self.n} '{name}' failed; no screenshot ({exc!r})", flush=True)
            print(f"[ui] dagster dev log ({self.server.log_path}), tail:\n{self.server.log_tail()}", flush=True)
            raise
        print(f"[ui] step {self.n} '{name}' ok in {time.monotonic() - started:.1f}s", flush=True)


def _asset_href(key: dg.AssetKey) -> str:
    return "/assets/" + "/".join(quote(part, safe="") for part in key.path)


def _asset_label(key: dg.AssetKey) -> str:
    return " / ".join(key.path)  # how the UI prints a multi-part key


def _catalog_url(url: str, group: str) -> str:
    """The asset catalog filtered to one group, as typing `group:"<name>"` in its search does."""
    selection = f'group:"{group}"'
    return f"{url}/assets?asset-selection={quote(selection, safe='')}"


def _skip_community_dialog(page) -> None:
    """A fresh instance greets the first visitor with "Join the Dagster community": Skip it."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import expect

    dialog = page.get_by_role("dialog").filter(has_text="Join the Dagster community")
    try:
        dialog.wait_for(state="visible", timeout=30_000)
    except PlaywrightTimeout:
        print("[ui] no 'Join the Dagster community' dialog appeared; continuing", flush=True)
        return
    dialog.get_by_role("button", name="Skip", exact=True).click()
    expect(dialog).to_be_hidden()


def _backfill_status(page) -> str:
    """The status tag beside the "Status" label on the backfill overview page."""
    block = page.get_by_text("Status", exact=True).first.locator("xpath=..")
    return block.inner_text(timeout=5_000).replace("Status", "", 1).strip()


def _backfill_row_counts(page, key: dg.AssetKey) -> tuple[int, int, int, int] | None:
    """(targeted, in progress, succeeded, failed) of one asset row of the backfill page."""
    link = page.locator(f'a[href="{_asset_href(key)}"]').first
    if not link.count():
        return None
    row = link.locator("xpath=ancestor::div[count(div)>=5][1]")  # the row: name cell + 4 count cells
    if not row.count():
        return None
    cells = [line.strip() for line in row.inner_text(timeout=5_000).splitlines() if line.strip()]
    numbers = [int(c) for c in cells if c.isdigit()]
    return tuple(numbers[-4:]) if len(numbers) >= 4 else None  # type: ignore[return-value]


# --------------------------------------------------------------------------- the test


def test_backfill_from_the_dagster_ui(page, dagster_dev: DagsterDev, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    groups = expected_assets()
    assert BACKFILL_DATASET in groups
    backfill_keys = groups[BACKFILL_DATASET]
    url = dagster_dev.url
    steps = Steps(page, dagster_dev, tmp_path)
    print(f"[ui] dagster dev at {url}; DAGSTER_HOME={dagster_dev.home}; CODEX_DATA_DIR={dagster_dev.data}", flush=True)

    with steps.step("open the UI and skip the community dialog"):
        page.goto(f"{url}/assets")
        _skip_community_dialog(page)

    for group, keys in groups.items():
        with steps.step(f"catalog lists the {group} assets"):
            page.goto(_catalog_url(url, group))
            for key in keys:
                link = page.locator(f'a[href="{_asset_href(key)}"]').first
                expect(link).to_be_visible()
                expect(link).to_contain_text(_asset_label(key))

    with steps.step(f"open the {BACKFILL_DATASET} lineage from the catalog"):
        page.goto(_catalog_url(url, BACKFILL_DATASET))
        page.get_by_role("link", name="View lineage").click()
        page.wait_for_url(re.compile(r"/asset-groups"))
        for key in backfill_keys:  # the graph's nodes carry the last key part
            expect(page.get_by_role("button", name=key.path[-1]).first).to_be_visible()

    with steps.step("choose the partition range in the launch dialog"):
        page.get_by_role("button", name="Materialize all").click()  # "Materialize all…"
        dialog = page.get_by_role("dialog").filter(has_text="Partition selection")
        expect(dialog).to_be_visible()
        expect(dialog).to_contain_text(re.compile(rf"materialize {len(backfill_keys)} assets", re.I))
        dialog.get_by_role("button", name="Custom", exact=True).click()
        partitions = dialog.get_by_role("textbox").first
        partitions.fill(f"[{BACKFILL_DAYS[0]}...{BACKFILL_DAYS[-1]}]")
        partitions.press("Enter")
        expect(dialog.get_by_text(f"{len(BACKFILL_DAYS)} partitions", exact=True)).to_be_visible()

    with steps.step("launch the backfill"):
        dialog.get_by_role("button", name="Launch backfill").click()
        toast = page.get_by_text(re.compile(r"Created backfill \w+"))
        expect(toast).to_be_visible()
        backfill_id = re.search(r"Created backfill (\w+)", toast.inner_text()).group(1)
        print(f"[ui] backfill {backfill_id} created", flush=True)
        try:
            page.get_by_role("button", name="View", exact=True).click(timeout=5_000)
            page.wait_for_url(re.compile(rf"/runs/b/{backfill_id}"), timeout=15_000)
        except Exception:  # the toast may have faded already: open the page directly
            page.goto(f"{url}/runs/b/{backfill_id}")

    with steps.step(f"backfill {backfill_id} succeeds in the UI"):
        expect(page.get_by_text(f"{BACKFILL_DAYS[0]}...{BACKFILL_DAYS[-1]}")).to_be_visible()
        deadline = time.monotonic() + BACKFILL_TIMEOUT_S
        last_reload = time.monotonic()
        seen: tuple = ()
        while True:
            try:
                status = _backfill_status(page)
                counts = {k.to_user_string(): _backfill_row_counts(page, k) for k in backfill_keys}
            except Exception as exc:  # a re-render between reads: try again next round
                status, counts = f"unreadable ({exc.__class__.__name__})", {}
            if (status, counts) != seen:
                print(f"[ui] +{BACKFILL_TIMEOUT_S - (deadline - time.monotonic()):.0f}s status={status} "
                      f"(targeted, in progress, succeeded, failed)={counts}", flush=True)
                seen = (status, counts)
            n = len(BACKFILL_DAYS)
            done = counts and all(c == (n, 0, n, 0) for c in counts.values())
            if status == "Succeeded" and done:
                break
            assert status not in FAILED_BACKFILL_STATES, f"backfill {backfill_id} ended {status}: {counts}"
            assert time.monotonic() < deadline, (
                f"backfill {backfill_id} not done after {BACKFILL_TIMEOUT_S}s: status={status} counts={counts}"
            )
            if time.monotonic() - last_reload > 10:  # the page's own refresh is slow (~30 s): reload
                page.reload()
                last_reload = time.monotonic()
            page.wait_for_timeout(2_000)

    with steps.step("the instance recorded the materializations and passing contract checks"):
        chunks_key = dg.AssetKey([BACKFILL_DATASET, "chunks"])
        chunk_counts: dict[str, int] = {}
        with dg.DagsterInstance.from_config(str(dagster_dev.home)) as instance:
            backfill = instance.get_backfill(backfill_id)
            assert backfill is not None and backfill.status.value == "COMPLETED_SUCCESS", backfill
            for key in backfill_keys:
                records = instance.fetch_materializations(
                    dg.AssetRecordsFilter(asset_key=key, asset_partitions=BACKFILL_DAYS), limit=100
                ).records
                by_day = {r.partition_key: r for r in records}
                assert sorted(by_day) == BACKFILL_DAYS, f"{key.to_user_string()}: materialized {sorted(by_day)}"
                for day, record in by_day.items():
                    run = instance.get_run_by_id(record.run_id)
                    assert run is not None and run.status == dg.DagsterRunStatus.SUCCESS, (key, day, run)
                    assert run.tags.get("dagster/backfill") == backfill_id, (key, day, run.tags)
                    meta = record.asset_materialization.metadata
                    # every Codex asset reports the file it wrote; the search index is one per dataset,
                    # rebuilt as days arrive (one or several builds, as the daemon groups the days), of
                    # which the newest two versions are kept: only the newest build's must exist
                    if "path" in meta and key.path[-1] != "search_index":
                        assert Path(meta["path"].value).exists(), (key, day, meta["path"])
                    if key != chunks_key:
                        continue
                    chunk_counts[day] = meta["chunks"].value
                    checks = [
                        e.dagster_event.event_specific_data
                        for e in instance.all_logs(record.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)
                    ]
                    contract = [c for c in checks if c.asset_key == chunks_key and c.check_name == CONTRACT_CHECK]
                    assert contract and all(c.passed for c in contract), (day, contract)
                if key.path[-1] == "search_index":
                    newest = max(records, key=lambda r: r.storage_id).asset_materialization.metadata
                    assert Path(newest["path"].value).exists(), (key, newest["path"])
        assert sorted(chunk_counts) == BACKFILL_DAYS

    with steps.step("the Parquet partitions exist under the data dir"):
        wh = Warehouse(dagster_dev.data)
        for day in BACKFILL_DAYS:
            date = dt.date.fromisoformat(day)
            for table in ("raw", "chunks"):
                path = wh.partition_path(BACKFILL_DATASET, table, date)
                assert path.is_file(), f"missing {path}"
            chunks = wh.read(BACKFILL_DATASET, "chunks", date)
            assert chunks.num_rows > 0 and chunks.num_rows == chunk_counts[day], (day, chunks.num_rows)
            assert set(chunks.column("partition_date").to_pylist()) <= {day, date}, day
