#!/usr/bin/env bash
# Install Debian's tesseract OCR (5.x, English data) for the documents dataset: PDF pages with no
# text layer (scans) are read by OCR when `tesseract` is on PATH (codex_pipeline/sources/pdf_ocr.py),
# and are named rejects ("OCR is not available") when it is not. CI runs this before the tests so
# the OCR tests run. Idempotent: does nothing when tesseract is already there. `--check`: say
# whether it is there and install nothing (exit 0 present, 1 absent).
set -euo pipefail
if [ "${1:-}" = --check ]; then
  command -v tesseract >/dev/null 2>&1 && { echo "$(command -v tesseract) ($(tesseract --version 2>&1 | head -n1))"; exit 0; }
  exit 1
fi

if command -v tesseract >/dev/null 2>&1; then
  echo "install_ocr: $(tesseract --version 2>&1 | head -n1) present"
  exit 0
fi

. "$(dirname "$0")/apt.sh"
apt_ready install_ocr tesseract-ocr tesseract-ocr-eng
$SUDO "${APT[@]}" install -y -qq --no-install-recommends tesseract-ocr tesseract-ocr-eng >/dev/null
echo "install_ocr: $(tesseract --version 2>&1 | head -n1) installed"
