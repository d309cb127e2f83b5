"""Shared fixtures: one tiny offline chat model per session, saved once to a temp folder."""

from __future__ import annotations

import copy

import pytest


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """A folder holding a tiny Qwen2 model and its locally trained tokenizer."""
    from rl_llm.testing import build_tiny_chat_model

    folder = tmp_path_factory.mktemp("tiny_qwen2")
    build_tiny_chat_model(folder, family="qwen2")
    return folder


@pytest.fixture(scope="session")
def tiny_tokenizer(tiny_model_dir):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    tokenizer.padding_side = "left"
    return tokenizer


@pytest.fixture(scope="session")
def _tiny_model_loaded(tiny_model_dir):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval()


@pytest.fixture
def tiny_model(_tiny_model_loaded):
    """A fresh copy of the tiny model (tests may train or edit it)."""
    return copy.deepcopy(_tiny_model_loaded).eval()
