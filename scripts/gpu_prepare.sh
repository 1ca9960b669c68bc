#!/usr/bin/env bash
# Prepare, on a machine with internet access, what the accelerator check needs on a bare GPU
# machine that has Python 3.12 with jax (CUDA), flax, optax, chex, numpy, matplotlib, pytest
# and pytest-xdist but nothing else of ours (docs/testing.md, "The accelerator check"):
#
#   scripts/gpu_prepare.sh [SOCIALJAX_CLONE]
#
# - .whl/: wheels of distrax and the part of its TensorFlow Probability chain such a machine
#   lacks (about 7 MB), for CPython 3.12 on x86-64 Linux;
# - .peer/SocialJax/: SocialJax at 9df972d (its socialjax/ and algorithms/ folders, about
#   2 MB), when given a clone of https://github.com/cooperativex/SocialJax, for --peer.
#
# Both folders are ignored by git (.gitignore). On the GPU machine, from the repository root:
#   python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
#   export PYTHONPATH=/tmp/site:$PWD
#   python3 scripts/gpu_check.py --out OUT --commit COMMIT [--peer .peer/SocialJax]
set -euo pipefail
cd "$(dirname "$0")/.."
PEER_COMMIT=9df972d
WHEELS=(distrax==0.1.9 tfp-nightly==0.26.0.dev20261027 dm-tree==0.1.10 gast==0.7.0 decorator==5.2.1)
rm -rf .whl && mkdir -p .whl
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl "${WHEELS[@]}"
echo "wheels in .whl/: $(ls .whl | tr '\n' ' ')"
if [[ $# -ge 1 ]]; then
    rm -rf .peer/SocialJax && mkdir -p .peer/SocialJax
    git -C "$1" archive "$PEER_COMMIT" socialjax algorithms | tar -x -C .peer/SocialJax
    echo "SocialJax $PEER_COMMIT in .peer/SocialJax/"
fi
