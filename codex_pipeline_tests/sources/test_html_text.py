from codex_pipeline.sources.html_text import html_to_text


def test_scripts_styles_and_noscript_dropped_entities_decoded() -> None:
    html = (
        "<html><head><title>Notice &amp; agenda</title><style>p{color:red}</style>"
        "<script>if (a < b) { x = '<p>no</p>'; }</script></head><body>"
        "<h1>Zoning&nbsp;hearing &#8212; caf&eacute;</h1><p>First   line\nsecond.<script>alert(1)</script> Done.</p>"
        "<ul><li>One</li><li>Two</li></ul><table><tr><th>A</th><th>B</th></tr><tr><td>1</td><td>2</td></tr></table>"
        "<noscript>enable js</noscript><p>3 &lt; 4</p></body></html>"
    )
    text, runs = html_to_text(html)
    assert text == (
        "Notice & agenda\n\nZoning hearing — café\n\nFirst line second. Done.\n\n"
        "One\nTwo\n\nA | B\n1 | 2\n\n3 < 4"
    )
    assert "alert" not in text and "enable js" not in text and "color" not in text
    # every run's xpath points at the element its text came from
    by_offset = dict(runs)
    assert by_offset[0] == "/html[1]/head[1]/title[1]"
    assert by_offset[text.index("Zoning")] == "/html[1]/body[1]/h1[1]"
    assert by_offset[text.index("Two")] == "/html[1]/body[1]/ul[1]/li[2]"


def test_unclosed_tags_and_pre_whitespace() -> None:
    text, _ = html_to_text("<body><p>para one<p>para two<pre>a   b\n  c</pre>")
    assert text == "para one\n\npara two\n\na   b\n  c"
