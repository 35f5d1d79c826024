#!/usr/bin/env python3
"""The @lode chat participant in a real VS Code (code-server in Chromium, driven by Playwright):
opens the chat panel, asks `@lode`, and checks lode's answer, which comes from the real
`lode acp` and a scripted model, appears in the panel.

usage: VENV/bin/python chat_in_code_server.py URL OUT_DIR
(editors/vscode/e2e/run.sh sets everything up and calls it.)"""
import sys
import time

from playwright.sync_api import sync_playwright

ANSWER = "I replaced hello with goodbye in src/main.rs."

url, out = sys.argv[1:3]
with sync_playwright() as p:
    browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(url, timeout=120_000)
    page.wait_for_selector(".monaco-workbench", timeout=120_000)
    time.sleep(5)  # extensions activate after the workbench
    # Open the chat view through the command palette (the same command whatever the layout).
    page.keyboard.press("Control+Shift+p")
    time.sleep(1)
    page.keyboard.type("Chat: Open Chat")
    time.sleep(1.5)
    page.keyboard.press("Enter")
    time.sleep(3)
    page.screenshot(path=f"{out}/chat-open.png")
    page.keyboard.type("@lode what did you change")
    time.sleep(1)
    page.keyboard.press("Enter")
    deadline = time.time() + 90
    found = False
    while time.time() < deadline:
        if page.get_by_text(ANSWER).count() > 0:
            found = True
            break
        time.sleep(1)
    page.screenshot(path=f"{out}/chat-answer.png")
    browser.close()
if not found:
    sys.exit(f"the chat panel never showed lode's answer {ANSWER!r} (screenshots in {out})")
print(f"ok: the chat panel shows {ANSWER!r}")
