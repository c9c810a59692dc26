"""The ANE track's runner: validation of Core ML packages on Linux, execution on a Mac's Neural Engine.

Linux (site and CI): `validate` builds or unpacks a solution's ML program, checks it against the rules of
the Neural Engine and the problem's interface, estimates its FLOPs, and converts the problem's reference
model the way Core ML does by default (the baseline). macOS (runner Macs only): `macos.py` compiles, places,
times and powers the package; nothing there can run on Linux.

Imports nothing from the site (`apps/`, `kernelhub/`): runner Macs do not install it.
"""
