#!/usr/bin/env bash
# The entry of every process a train job starts in the image: `in_image.sh COMMAND [ARGS...]`.
# Stops with one line when the `lie` Python imports is not this checkout's src/ (or a copy with
# the same contents), i.e. when the image would train with code other than the tree's
# (lie.engines.image_source); then runs the command. LIE_TREE_SRC: the checkout's src/ (default
# $PWD/src).
set -euo pipefail
python -m lie.engines.image_source "${LIE_TREE_SRC:-$PWD/src}"
exec "$@"
