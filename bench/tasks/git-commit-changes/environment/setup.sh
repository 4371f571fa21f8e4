#!/bin/sh
# The repository the task starts from: Harbor's Dockerfile runs this in /app, bench/eval in the copied workspace.
set -e
git init -q -b main
git config user.name "Eval Bot"
git config user.email "eval@example.com"
git add -A
git commit -q -m "Initial commit"
printf 'print("Hello, world")\n' > hello.py
printf '# Notes\n\nThe greeting is fixed.\n' > NOTES.md
