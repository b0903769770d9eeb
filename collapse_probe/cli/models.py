"""``collapse-probe models``: list model aliases and backend prefixes."""

from __future__ import annotations

import argparse

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
    from collapse_probe.models._registry import HOSTED

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
