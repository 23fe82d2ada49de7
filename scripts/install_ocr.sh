#!/usr/bin/env bash
# Install Debian's tesseract OCR (5.x, English data) for the documents dataset: PDF pages with no
# text layer (scans) are read by OCR when `tesseract` is on PATH (codex_pipeline/sources/pdf_ocr.py),
# and are named rejects ("OCR is not available") when it is not. CI runs this before the tests so
# the OCR tests run. Idempotent: does nothing when tesseract is already there.
set -euo pipefail

if command -v tesseract >/dev/null 2>&1; then
  echo "install_ocr: $(tesseract --version 2>&1 | head -n1) present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
  else
    echo "install_ocr: not root and no sudo; install it yourself (apt-get install tesseract-ocr tesseract-ocr-eng)" >&2
    exit 1
  fi
fi

export DEBIAN_FRONTEND=noninteractive
# wait for a concurrent apt/dpkg run instead of failing on its lock
APT=(apt-get -o DPkg::Lock::Timeout=600)
$SUDO "${APT[@]}" update -qq
$SUDO "${APT[@]}" install -y -qq --no-install-recommends tesseract-ocr tesseract-ocr-eng >/dev/null
echo "install_ocr: $(tesseract --version 2>&1 | head -n1) installed"
