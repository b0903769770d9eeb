"""``collapse-probe models``: list model aliases and backend prefixes."""

from __future__ import annotations

import argparse

HOSTED = (
    ("openai/MODEL", "OpenAI: $OPENAI_API_KEY, $OPENAI_BASE_URL"),
    ("azure/DEPLOYMENT", "Azure OpenAI: $AZURE_OPENAI_ENDPOINT, $AZURE_OPENAI_API_KEY, $OPENAI_API_VERSION"),
    ("openai-compatible/MODEL@URL", "any Chat Completions server (vLLM, llama.cpp, ...): $COLLAPSE_PROBE_API_KEY"),
    ("anthropic/MODEL", "Anthropic: $ANTHROPIC_API_KEY, $ANTHROPIC_BASE_URL"),
    ("bedrock/MODEL_ID", "Claude on Amazon Bedrock: AWS credentials, $AWS_REGION"),
    ("vertex-anthropic/MODEL", "Claude on Vertex AI: $ANTHROPIC_VERTEX_PROJECT_ID, $CLOUD_ML_REGION"),
    ("google/MODEL", "Gemini API: $GEMINI_API_KEY or $GOOGLE_API_KEY"),
    ("vertex/MODEL", "Gemini on Vertex AI: $GOOGLE_CLOUD_PROJECT, $GOOGLE_CLOUD_LOCATION"),
    ("litellm/PROVIDER/MODEL", 'anything LiteLLM routes to (pip install "collapse-probe[litellm]")'),
)
"""Hosted-model spec prefixes and where each takes its credentials from."""

PLACEHOLDER = {"hf": "PATH", "azure": "DEPLOYMENT", "bedrock": "MODEL_ID", "litellm": "PROVIDER/MODEL"}
"""What follows a backend prefix when it is not a model name (``hf/PATH``: a local model directory)."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    sub.add_parser(
        "models",
        help="list model aliases and backend spec prefixes",
        description="List the model aliases (smollm2, gemma3-270m, ...), the backend spec prefixes (local/, hf/, "
        "vllm/, openai/, anthropic/, google/, ..., scripted:FILE.json and the shipped scripted:NAME models, vs:SPEC) "
        "and the environment variables each hosted backend reads. A spec is what --sim, --policy, --policies, "
        "--sims and --judge take.",
    )


def run(args: argparse.Namespace) -> int:
    from collapse_probe.models import BACKENDS, list_models

    print(f"{'alias':<18} {'spec':<34} description")
    for alias, spec, desc in list_models():
        print(f"{alias:<18} {spec:<34} {desc}")
    print(
        "\nbackend prefixes: "
        + ", ".join(f"{p}/{PLACEHOLDER.get(p, 'MODEL')}" for p in BACKENDS if p != "scripted")
        + ", scripted:FILE.json"
    )
    from collapse_probe.models.scripted import packaged_scripted

    print("shipped scripted models (any directory): " + ", ".join(f"scripted:{n}" for n in packaged_scripted()))
    print("simulator modes: vs:SPEC (Verbalized Sampling), direct:SPEC (default)")
    print('\nhosted models (official SDKs, pip install "collapse-probe[api]"; credentials from the environment):')
    for prefix, how in HOSTED:
        print(f"  {prefix:<34} {how}")
    return 0
