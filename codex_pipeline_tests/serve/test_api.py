"""`codex serve` over HTTP on loopback: every endpoint against the catalog it serves, and every 4xx path."""

from __future__ import annotations

import http.client
import json
import re
from pathlib import Path
from urllib.parse import quote, urlparse

import duckdb

from codex_pipeline.core.ids import CHUNK_ID_PATTERN
from codex_pipeline.serve.lookup import Catalog
from codex_pipeline.serve.models import DATASET_PATTERN, DOC_ID_PATTERN
from codex_pipeline.serve.settings import ServeSettings
from codex_pipeline.serve.state import ServeState
from codex_pipeline_tests.fakes import FakeEmbedder
from codex_pipeline_tests.serve.conftest import GUIDE, NOTE, OLD_BETA, Server, start


def _canonical(server: Server, doc_id: str) -> str:
    with Catalog(server.state.warehouse).session() as con:
        row = con.execute("SELECT canonical_text FROM codex.docs_raw_history WHERE doc_id = ? UNION ALL "
                          "SELECT canonical_text FROM codex.osha_safety_raw WHERE doc_id = ? LIMIT 1",
                          [doc_id, doc_id]).fetchone()
    assert row is not None
    return str(row[0])


def test_health_ready_and_openapi(server: Server) -> None:
    with server.client() as c:
        assert c.get("/health").json() == {"status": "ok"}
        ready = c.get("/ready").json()
        assert ready["ready"] is True and ready["datasets"] == ["docs", "osha_safety"], ready
        spec = c.get("/openapi.json").json()
    assert {"/search", "/chunks/{chunk_id}", "/chunks/{chunk_id}/parent", "/chunks/{chunk_id}/children",
            "/chunks/{chunk_id}/neighbours", "/documents/{doc_id}", "/health", "/ready", "/metrics"} <= set(spec["paths"])
    params = {p["name"]: p["schema"] for p in spec["paths"]["/chunks/{chunk_id}"]["get"]["parameters"]}
    assert params["chunk_id"]["pattern"] == CHUNK_ID_PATTERN  # ids and dataset names are declared with their pattern
    assert DATASET_PATTERN in json.dumps(params["dataset"])
    doc = {p["name"]: p["schema"] for p in spec["paths"]["/documents/{doc_id}"]["get"]["parameters"]}
    assert doc["doc_id"]["pattern"] == DOC_ID_PATTERN and re.match(DOC_ID_PATTERN, GUIDE)
    search = spec["components"]["schemas"]["SearchRequest"]["properties"]
    assert search["k"]["type"] == "integer" and search["datasets"]["items"]["pattern"] == DATASET_PATTERN


def test_search_hits_cite_the_canonical_text(server: Server) -> None:
    with server.client() as c:
        r = c.post("/search", json={"query": "corrosion girders east abutment", "k": 3, "datasets": ["docs"]})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["units"] == "chunks" and body["hits"], body
        for hit in body["hits"]:
            text = _canonical(server, hit["doc_id"])
            assert hit["evidence_text"] == [text[s:e] for s, e in hit["evidence"]]
            assert hit["locator"] and hit["ranks"] and hit["doc_id"] == GUIDE
            assert hit["viewer_url"].startswith("/view/document?")
        bm25 = c.post("/search", json={"query": "girders", "mode": "bm25", "k": 2, "date_from": "2026-11-01",
                                       "date_to": "2026-11-30"}).json()
        assert bm25["hits"] and all("girders" in h["text"] for h in bm25["hits"])
        none = c.post("/search", json={"query": "girders", "mode": "bm25", "date_to": "2026-01-01"}).json()
        assert none["hits"] == []


def test_chunk_follows_redirects_and_says_so(server: Server) -> None:
    with server.client() as c:
        r = c.get(f"/chunks/{OLD_BETA}")
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["redirected"] is True and body["requested_id"] == OLD_BETA
        assert body["chunk"]["section_id"] == "log-book/beta"
        assert [h["match"] for h in body["redirects"]] == ["content_hash"]
        new_id = body["chunk"]["chunk_id"]
        same = c.get(f"/chunks/{new_id}").json()
        assert same["redirected"] is False and same["chunk"] == body["chunk"]
        nb = c.get(f"/chunks/{OLD_BETA}/neighbours").json()
        assert nb["of"] == new_id and [x["section_id"] for x in nb["before"]] == ["log-book"]
        assert [x["section_id"] for x in nb["after"]] == ["log-book/gamma"]


def test_parent_and_children(server: Server) -> None:
    with server.client() as c:
        hits = c.post("/search", json={"query": "inspection citation penalty", "k": 20, "mode": "bm25",
                                       "datasets": ["osha_safety"]}).json()["hits"]
        child = next(h for h in hits if h["parent_chunk_id"])
        parent = c.get(f"/chunks/{child['chunk_id']}/parent").json()["chunks"]
        assert [p["chunk_id"] for p in parent] == [child["parent_chunk_id"]]
        kids = c.get(f"/chunks/{child['parent_chunk_id']}/children").json()["chunks"]
        assert child["chunk_id"] in [k["chunk_id"] for k in kids]
        assert all(k["parent_chunk_id"] == child["parent_chunk_id"] for k in kids)
        top = c.get(f"/chunks/{child['parent_chunk_id']}/parent").json()
        assert top["chunks"] == [] or top["chunks"][0]["chunk_id"] != child["chunk_id"]


def test_documents_current_history_and_deletion(server: Server) -> None:
    with server.client() as c:
        doc = c.get(f"/documents/{quote(GUIDE)}").json()
        assert doc["deleted"] is False and doc["landed_on"] == ["2026-11-25"] and doc["title"]
        text = doc["canonical_text"]
        assert [ch["section_id"] for ch in doc["chunks"]] == ["log-book", "log-book/beta", "log-book/gamma"]
        for ch in doc["chunks"]:
            assert "".join(text[s:e] for s, e in ch["spans"]).split() == ch["text"].split()
        gone = c.get(f"/documents/{quote(NOTE)}", params={"dataset": "docs"}).json()
        assert gone["deleted"] is True and gone["deleted_on"] == "2026-11-26" and gone["deleted_by"] == "tombstone"
        assert "ferry timetable" in gone["canonical_text"]


def test_metrics_count_requests_and_index_age(server: Server) -> None:
    with server.client() as c:
        c.get("/health")
        c.get("/chunks/urn:aprs:chunk:0000000000000000")
        text = c.get("/metrics").text
    assert re.search(r'codex_http_requests_total\{route="/health",method="GET",status="200"\} [1-9]', text)
    assert re.search(r'codex_http_requests_total\{route="/chunks/\{chunk_id\}",method="GET",status="404"\} [1-9]', text)
    assert 'codex_http_request_duration_seconds_bucket{route="/health",le="+Inf"}' in text
    assert re.search(r'codex_index_age_seconds\{dataset="docs"\} \d', text)
    assert "urn:aprs:chunk:0000" not in text  # routes by template: no series per id


def _error(r) -> str:  # type: ignore[no-untyped-def]
    body = r.json()
    assert set(body) == {"error", "status"} and body["status"] == r.status_code, body
    assert "\n" not in body["error"]
    return str(body["error"])


def test_every_4xx_is_one_json_line(server: Server) -> None:
    with server.client() as c:
        assert "not a chunk id" in _error(c.get("/chunks/not-an-id"))  # 400
        assert c.get("/chunks/not-an-id").status_code == 400
        r = c.get("/chunks/urn:aprs:chunk:0123456789abcdef")
        assert r.status_code == 404 and "nor in its redirect table" in _error(r)
        gone = c.get(f"/chunks/{_note_chunk(server)}")
        assert gone.status_code == 410 and "retracted" in _error(gone)
        r = c.get(f"/chunks/{OLD_BETA}", params={"dataset": "nope"})
        assert r.status_code == 404 and "has no chunk table" in _error(r)
        r = c.get("/documents/urn:aprs:docs:never.md")
        assert r.status_code == 404 and "no document" in _error(r)
        r = c.get("/documents/" + quote("urn:\x01bad"))
        assert r.status_code == 400 and "not a document id" in _error(r)
        r = c.get("/documents/" + quote("../../../etc/passwd", safe=""))  # an id, never a path
        assert r.status_code == 404 and "no document" in _error(r)
        r = c.get("/chunks/" + quote("../../catalog.duckdb", safe=""))
        assert r.status_code in (400, 404)
        r = c.get(f"/chunks/{OLD_BETA}", params={"dataset": "docs_chunks; DROP VIEW x"})
        assert r.status_code == 422 and _error(r).startswith("query.dataset")  # not a dataset name (the OpenAPI pattern)
        for body, where in [({"query": "x", "k": True}, "k"), ({"query": "x", "k": "3"}, "k"), ({"query": "x", "k": 3.0}, "k"),
                            ({"query": "x", "date_from": 0}, "date_from"), ({"query": "x", "date_to": 20261125}, "date_to"),
                            ({"query": 7}, "query"), ({"query": "x", "datasets": [1]}, "datasets")]:
            r = c.post("/search", json=body)  # strict types: no coercion of booleans, numbers or text
            assert r.status_code == 422 and _error(r).startswith(where), (body, r.text)
        r = c.get("/no/such/endpoint")
        assert r.status_code == 404 and "/docs" in _error(r)
        for body, where in [({"query": "x" * 1001}, "query"), ({"query": "x", "k": 0}, "k"), ({"query": "x", "k": 101}, "k"),
                            ({"query": ""}, "query"), ({"query": "x", "mode": "fuzzy"}, "mode"),
                            ({"query": "x", "surprise": 1}, "surprise"), ({"k": 3}, "query"),
                            ({"query": "x", "date_from": "yesterday"}, "date_from"),
                            ({"query": "x", "datasets": ["Bad Name"]}, "datasets")]:
            r = c.post("/search", json=body)
            assert r.status_code == 422 and _error(r).startswith(where), (body, r.text)
        r = c.post("/search", content=b"{not json", headers={"Content-Type": "application/json"})
        assert r.status_code == 422, r.text
        r = c.post("/search", json={"query": "x", "datasets": ["ghost"]})
        assert r.status_code == 404 and "ghost" in _error(r)
        r = c.post("/search", json={"query": "x" * 70_000})
        assert r.status_code == 413 and "at most" in _error(r)
        r = c.get("/chunks/" + OLD_BETA + "/neighbours", params={"before": 99})
        assert r.status_code == 422 and _error(r).startswith("query.before")
    # a body of unknown length (chunked transfer encoding) is refused before it is read
    parsed = urlparse(server.url)
    con = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=30)
    con.putrequest("POST", "/search")
    con.putheader("Transfer-Encoding", "chunked")
    con.putheader("Content-Type", "application/json")
    con.endheaders()
    payload = json.dumps({"query": "girders"}).encode()
    con.send(f"{len(payload):x}\r\n".encode() + payload + b"\r\n0\r\n\r\n")
    resp = con.getresponse()
    assert resp.status == 411 and "Content-Length" in json.loads(resp.read())["error"]
    con.close()


def _note_chunk(server: Server) -> str:
    with Catalog(server.state.warehouse).session() as con:
        try:
            row = con.execute("SELECT chunk_id FROM codex.docs_chunks_history WHERE doc_id = ? LIMIT 1", [NOTE]).fetchone()
        except duckdb.Error:
            row = None
    assert row is not None
    return str(row[0])


def test_api_key_cors_and_server_limits(keyed_server: Server) -> None:
    with keyed_server.client() as c:
        assert c.get("/health").status_code == 200 and c.get("/ready").status_code == 200  # probes stay open
        r = c.post("/search", json={"query": "girders"})
        assert r.status_code == 401 and "no API key" in _error(r)
        r = c.post("/search", json={"query": "girders"}, headers={"X-API-Key": "wrong"})
        assert r.status_code == 401 and "a wrong API key" in _error(r)
        assert c.get("/metrics").status_code == 401
        assert c.get("/view", follow_redirects=False).headers["location"] == "/view/login"
        ok = {"X-API-Key": "s3cret key"}
        assert c.post("/search", json={"query": "girders", "k": 5}, headers=ok).status_code == 200
        r = c.post("/search", json={"query": "girders", "k": 6}, headers=ok)
        assert r.status_code == 422 and "at most 5" in _error(r)
        r = c.post("/search", json={"query": "girders " * 300}, headers=ok)
        assert r.status_code == 413
        cookie = c.get("/view", cookies={"codex_api_key": quote("s3cret key")})
        assert cookie.status_code == 200
        pre = c.options("/search", headers={"Origin": "https://clerk.example", "Access-Control-Request-Method": "POST",
                                            "Access-Control-Request-Headers": "x-api-key"})
        assert pre.status_code == 200 and pre.headers["access-control-allow-origin"] == "https://clerk.example"
        evil = c.options("/search", headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"})
        assert "access-control-allow-origin" not in evil.headers


def test_viewer_login_sets_an_http_only_cookie(keyed_server: Server) -> None:
    """The viewer's key comes back as an HttpOnly, SameSite=Strict cookie (Secure over https); a wrong key is a 401 page."""
    with keyed_server.client() as c:
        wrong = c.post("/view/login", data={"key": "nope"}, follow_redirects=False)
        assert wrong.status_code == 401 and "not this server" in wrong.text and "set-cookie" not in wrong.headers
        ok = c.post("/view/login", data={"key": "s3cret key"}, follow_redirects=False)
        assert ok.status_code == 303 and ok.headers["location"] == "/view"
        flags = [f.strip().lower() for f in ok.headers["set-cookie"].split(";")]
        assert "httponly" in flags and "samesite=strict" in flags and "secure" not in flags
        assert c.get("/view").status_code == 200  # the cookie the client kept opens the viewer
        assert "document.cookie" not in c.get("/view/login").text
        proxied = c.post("/view/login", data={"key": "s3cret key"}, headers={"X-Forwarded-Proto": "https"},
                         follow_redirects=False)
        assert "secure" in [f.strip().lower() for f in proxied.headers["set-cookie"].split(";")]


def test_filters_and_units(server: Server) -> None:
    with server.client() as c:
        only = c.post("/search", json={"query": "girders corrosion", "mode": "bm25", "k": 10,
                                       "chunk_types": ["no_such_type"]}).json()
        assert only["hits"] == []
        docs = c.post("/search", json={"query": "girders corrosion", "mode": "bm25", "k": 10, "datasets": ["docs"]})
        assert {h["dataset"] for h in docs.json()["hits"]} == {"docs"}
        meta = c.post("/search", json={"query": "girders", "mode": "bm25", "metadata": {"no_such_key": 1}}).json()
        assert meta["hits"] == []
        props = c.post("/search", json={"query": "girders", "units": "propositions", "mode": "bm25"})
        assert props.status_code == 200 and props.json()["units"] == "propositions"


def test_an_empty_data_dir_is_alive_but_not_ready(tmp_path: Path) -> None:
    state = ServeState.open(ServeSettings(data_dir=tmp_path / "empty", embedder=FakeEmbedder(), refresh_interval_s=0))
    for server in start(state.config, state):
        with server.client() as c:
            assert c.get("/health").status_code == 200
            r = c.get("/ready")
            assert r.status_code == 503 and r.json()["ready"] is False and r.json()["datasets"] == []
            assert c.post("/search", json={"query": "anything"}).json()["hits"] == []
            r = c.get("/documents/urn:aprs:docs:x.md")
            assert r.status_code == 404 and "no document" in _error(r)
            r = c.get("/chunks/urn:aprs:chunk:0123456789abcdef")
            assert r.status_code == 404
