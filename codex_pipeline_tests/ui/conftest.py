"""Browser tests of the Dagster UI (headless Debian chromium driven by playwright)."""


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "ui: drives the Dagster UI of a real `dagster dev` in headless chromium "
        "(needs /usr/bin/chromium: bash scripts/install_browser.sh); deselect with -m 'not ui'",
    )
