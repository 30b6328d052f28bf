"""Every overlay of deploy/ renders with `kubectl kustomize`, and every rendered document
passes `kubernetes-validate --strict` for each Kubernetes version we support, or, for a
custom resource the tool has no schema of, our strict schema of it (tests/deploy/schemas).

What this checks: each built-in object against the OpenAPI schema of that release (kinds
and apiVersions that exist, field names, types, required fields, enums; strict: no unknown
field). What it does not: cross-object references (tests/deploy/test_overlays_structure.py
does those), int-or-string formats (maxUnavailable: "one" passes), semantics the API server
checks (label value syntax, immutable fields), admission policies."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import jsonschema  # type: ignore[import-untyped]  # the validator kubernetes-validate uses
import pytest
import yaml
from tests.deploy.kube import (
    KUBERNETES_VERSIONS,
    OVERLAYS,
    crd_schema,
    kubernetes_validate,
    named,
    render,
    rendered_text,
)

PASSED = re.compile(r"^INFO .* passed for resource (?P<kn>\S+) against version (?P<v>\S+)$")
NO_SCHEMA = re.compile(r"^WARN .* Couldn't find schema for kind (?P<kind>\S+) with api version")


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_rendered_document_passes_kubernetes_validate_strict(
    overlay: str, tmp_path: Path
) -> None:
    docs = render(overlay)
    path = tmp_path / f"{overlay}.yaml"
    path.write_text(rendered_text(overlay))
    out = kubernetes_validate(path, *KUBERNETES_VERSIONS)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert not [line for line in lines if line.startswith(("ERROR", "FATAL"))]
    passed = [m for line in lines if (m := PASSED.match(line))]
    unvalidated = {m["kind"] for line in lines if (m := NO_SCHEMA.match(line))}
    # The only kinds without a schema of the tool are the custom resources we validate
    # below; every other document was validated once per version.
    custom = [d for d in docs if crd_schema(d) is not None]
    assert unvalidated == {d["kind"] for d in custom}
    assert len(passed) == (len(docs) - len(custom)) * len(KUBERNETES_VERSIONS)
    assert {m["v"] for m in passed} == set(KUBERNETES_VERSIONS)
    names = {f"{d['kind'].lower()}/{d['metadata']['name']}" for d in docs if d not in custom}
    assert {m["kn"] for m in passed} == names


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_custom_resources_pass_our_strict_schema(overlay: str) -> None:
    for doc in render(overlay):
        schema = crd_schema(doc)
        if schema is not None:
            jsonschema.Draft202012Validator(schema).validate(doc)


def test_the_production_overlay_has_a_service_monitor_to_validate() -> None:
    docs = render("kubernetes-production")
    assert crd_schema(named(docs, "ServiceMonitor", "proxyfleet")) is not None


def test_kubernetes_validate_rejects_a_misspelt_field(tmp_path: Path) -> None:
    """The check can fail: strict mode refuses a field the schema does not have."""
    api = named(render("kubernetes-production"), "Deployment", "api")
    container = api["spec"]["template"]["spec"]["containers"][0]
    container["securityContext"]["readOnlyRootFilesytem"] = True
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(api))
    out = kubernetes_validate(path, *KUBERNETES_VERSIONS)
    assert out.returncode == 1
    assert "'readOnlyRootFilesytem' was unexpected" in out.stdout


def test_our_service_monitor_schema_rejects_a_misspelt_field() -> None:
    monitor = named(render("kubernetes-production"), "ServiceMonitor", "proxyfleet")
    schema = crd_schema(monitor)
    bad = copy.deepcopy(monitor)
    bad["spec"]["endpoints"][0]["intervall"] = "30s"
    with pytest.raises(jsonschema.ValidationError, match="intervall"):
        jsonschema.Draft202012Validator(schema).validate(bad)
    bad = copy.deepcopy(monitor)
    bad["spec"]["endpoints"][0]["interval"] = "30 seconds"
    with pytest.raises(jsonschema.ValidationError, match="does not match"):
        jsonschema.Draft202012Validator(schema).validate(bad)
