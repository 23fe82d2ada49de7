"""Email exports: mbox/pipermail and ``.eml`` parsing (``mbox``), reply threading and
thread rendering (``threads``), and the landing reader (``reader``).
"""
