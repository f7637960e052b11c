"""RBAC as the API server applies it: each request's attributes (verb, API group, resource,
subresource, namespace) checked against a Role, and a 403 with Kubernetes' own Status body
when no rule allows it.

The attributes follow the authorization docs (kubernetes.io/docs/reference/access-authn-authz/
authorization/#determine-the-request-verb): GET on a collection is ``list``, or ``watch`` with
``?watch=true``; GET on one object is ``get``; POST ``create``, PATCH ``patch``, PUT
``update``, DELETE on one object ``delete``. A subresource is checked as
``<resource>/<subresource>`` (``pods/log``). Non-resource URLs (``/version``) are open to any
authenticated user, as the default ``system:discovery`` binding makes them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

DOCS_PAGE = Path(__file__).parents[2] / "docs" / "kubernetes.md"
USER = "system:serviceaccount:airflow:airflow-worker"  # the docs' RoleBinding subject
_PATH = re.compile(
    r"^/(?:api/(?P<core>v1)|apis/(?P<group>[^/]+)/[^/]+)"
    r"(?:/namespaces/(?P<namespace>[^/]+))?/(?P<resource>[^/]+)"
    r"(?:/(?P<name>[^/]+)(?:/(?P<sub>[^/]+))?)?$"
)


@dataclass(frozen=True)
class Access:
    """One request's authorization attributes."""

    verb: str
    group: str
    resource: str  # "pods/log" for a subresource
    namespace: str | None
    name: str | None = None

    @classmethod
    def of(cls, method: str, path: str, watch: bool) -> Access | None:
        """The attributes of a request, or None for a non-resource URL."""
        match = _PATH.match(path)
        if match is None:
            return None
        name, sub = match["name"], match["sub"]
        resource = f"{match['resource']}/{sub}" if sub else match["resource"]
        if method == "GET":
            verb = "get" if name else ("watch" if watch else "list")
        else:
            verb = {"POST": "create", "PATCH": "patch", "PUT": "update"}.get(method, "")
            verb = verb or ("delete" if name else "deletecollection")
        return cls(verb, match["group"] or "", resource, match["namespace"], name)

    def forbidden_message(self) -> str:
        """The API server's wording, which clients and people parse alike."""
        base = self.resource.split("/")[0]
        kind = f"{base}.{self.group}" if self.group else base
        subject = f'{kind} "{self.name}"' if self.name else kind
        where = (
            f' in the namespace "{self.namespace}"' if self.namespace else " at the cluster scope"
        )
        return (
            f'{subject} is forbidden: User "{USER}" cannot {self.verb} resource '
            f'"{self.resource}" in API group "{self.group}"{where}'
        )


@dataclass(frozen=True)
class Rule:
    api_groups: frozenset[str]
    resources: frozenset[str]
    verbs: frozenset[str]

    def allows(self, access: Access) -> bool:
        return (
            (access.group in self.api_groups or "*" in self.api_groups)
            and (access.resource in self.resources or "*" in self.resources)
            and (access.verb in self.verbs or "*" in self.verbs)
        )

    def grants(self) -> set[tuple[str, str, str]]:
        """Each (verb, group, resource) this rule names."""
        return {(v, g, r) for v in self.verbs for g in self.api_groups for r in self.resources}


@dataclass
class Role:
    """A namespaced Role, bound (as the docs' RoleBinding does) to the provider's identity in
    every namespace the tests use."""

    rules: tuple[Rule, ...]
    used: set[tuple[str, str, str]] = field(default_factory=set)
    denied: list[Access] = field(default_factory=list)

    @classmethod
    def from_manifest(cls, manifest: dict[str, Any]) -> Role:
        rules = tuple(
            Rule(
                frozenset(rule.get("apiGroups") or ()),
                frozenset(rule.get("resources") or ()),
                frozenset(rule.get("verbs") or ()),
            )
            for rule in manifest.get("rules") or ()
        )
        return cls(rules)

    def check(self, access: Access) -> bool:
        """Whether the Role allows ``access``; remembers it either way."""
        if any(rule.allows(access) for rule in self.rules):
            self.used.add((access.verb, access.group, access.resource))
            return True
        self.denied.append(access)
        return False

    def grants(self) -> set[tuple[str, str, str]]:
        return set().union(*(rule.grants() for rule in self.rules))

    def without(self, verb: str, group: str, resource: str) -> Role:
        """This Role less one permission: how a cluster with a narrower Role behaves."""
        rules = []
        for rule in self.rules:
            if (verb, group, resource) in rule.grants():
                rules.append(Rule(rule.api_groups, rule.resources, rule.verbs - {verb}))
                others = rule.resources - {resource}
                if others:
                    rules.append(Rule(rule.api_groups, others, frozenset({verb})))
            else:
                rules.append(rule)
        return Role(tuple(rules))


def docs_role_manifest(page: Path = DOCS_PAGE, name: str = "airflow-jax") -> dict[str, Any]:
    """The Role called ``name`` that ``docs/kubernetes.md`` publishes, from its YAML block,
    so the docs and the tests (the emulator's and the real control plane's) cannot drift."""
    blocks = re.findall(r"```yaml\n(.*?)```", page.read_text(), flags=re.DOTALL)
    for block in blocks:
        for doc in yaml.safe_load_all(block):
            is_role = isinstance(doc, dict) and doc.get("kind") == "Role"
            if is_role and doc["metadata"]["name"] == name:
                return doc
    raise LookupError(f"no Role {name!r} in a yaml block of {page}")


def docs_role(page: Path = DOCS_PAGE) -> Role:
    """The docs' Role, as the emulator enforces it."""
    return Role.from_manifest(docs_role_manifest(page))
