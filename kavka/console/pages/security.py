"""ACLs and SCRAM users: list, add and remove, through DescribeAcls,
CreateAcls and DeleteAcls, and Describe/AlterUserScramCredentials
(KIP-554: the password is salted in the console and never sent, logged or
shown). A binding is checked with Kafka's CreateAcls rules before it is
sent (``binding_problem``); removing deletes exactly the listed binding."""

from __future__ import annotations

from starlette.requests import Request
from starlette.routing import Route

from kavka.common.errors import KafkaError
from kavka.console import forms
from kavka.console.forms import FormError
from kavka.console.service import describe_error
from kavka.console.web import Web, form_of
from kavka.security.acl import (
    ANY_BINDING,
    CONCRETE_RESOURCE_TYPES,
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
    binding_problem,
    parse_name,
)
from kavka.security.sasl.credentials import MAX_ITERATIONS, MIN_ITERATIONS, ScramMechanism

OPERATIONS = tuple(o for o in AclOperation if o not in (AclOperation.UNKNOWN, AclOperation.ANY))


def _enum(form, name: str, enum, label: str):
    raw = forms.text(form, name, label, required=True, max_len=40)
    value = parse_name(enum, raw)
    if value is None or value.name in ("UNKNOWN", "ANY", "MATCH"):
        raise FormError(f"{label} {raw[:40]!r} is not one of Kafka's")
    return value


def binding_of(form) -> AclBinding:
    rtype = _enum(form, "resource_type", ResourceType, "resource type")
    name = forms.text(form, "resource_name", "resource name", required=True, max_len=1000).strip()
    ptype = _enum(form, "pattern_type", PatternType, "pattern type")
    principal = forms.text(form, "principal", "principal", required=True, max_len=1000).strip()
    host = forms.text(form, "host", "host", max_len=300).strip() or "*"
    op = _enum(form, "operation", AclOperation, "operation")
    perm = _enum(form, "permission", AclPermissionType, "permission")
    binding = AclBinding(ResourcePattern(rtype, name, ptype), AccessControlEntry(principal, host, op, perm))
    problem = binding_problem(binding)
    if problem is not None:
        raise FormError(problem)
    return binding


def routes(web: Web) -> list[Route]:
    admin = web.service.admin

    async def acls_page(request: Request, status: int = 200, error: str | None = None, form=None):
        bindings, list_error = [], None
        try:
            bindings = sorted(await admin.describe_acls(ANY_BINDING),
                              key=lambda b: (b.pattern.resource_type, b.pattern.name, b.entry.principal))
        except KafkaError as e:
            list_error = describe_error(e)
        return web.render(request, "acls.html", status, bindings=bindings, error=error, list_error=list_error,
                          form=form or {}, resource_types=CONCRETE_RESOURCE_TYPES, operations=OPERATIONS)

    @web.page("ACLs")
    async def acls(request: Request):
        return await acls_page(request)

    @web.page("Add ACL")
    async def add_acl(request: Request):
        form = await form_of(request)
        try:
            binding = binding_of(form)
            await admin.create_acls([binding])
        except (FormError, KafkaError) as e:
            return await acls_page(request, 400 if isinstance(e, FormError) else 409,
                                   f"ACL not added: {describe_error(e) if isinstance(e, KafkaError) else e}", form)
        return web.done("/acls", f"Added {binding.entry.permission_type.name} {binding.entry.operation.name} "
                                 f"for {binding.entry.principal} on {binding.pattern.resource_type.name} "
                                 f"{binding.pattern.name}")

    @web.page("Remove ACL")
    async def remove_acl(request: Request):
        form = await form_of(request)
        try:
            b = binding_of(form)
            f = AclBindingFilter(ResourcePatternFilter(b.pattern.resource_type, b.pattern.name, b.pattern.pattern_type),
                                 AccessControlEntryFilter(b.entry.principal, b.entry.host, b.entry.operation,
                                                          b.entry.permission_type))
            deleted = await admin.delete_acls([f])
        except (FormError, KafkaError) as e:
            return await acls_page(request, 400 if isinstance(e, FormError) else 409,
                                   f"ACL not removed: {describe_error(e) if isinstance(e, KafkaError) else e}")
        n = sum(len(d) for d in deleted)
        return web.done("/acls", f"Removed {n} ACL(s)" if n else "No such ACL; nothing removed")

    async def users_page(request: Request, status: int = 200, error: str | None = None, form=None):
        users, list_error = {}, None
        try:
            users = await admin.describe_user_scram_credentials()
        except KafkaError as e:
            list_error = describe_error(e)
        form = {k: v for k, v in (form or {}).items() if k != "password"}  # never echoed back
        return web.render(request, "users.html", status, users=sorted(users.items()), error=error,
                          list_error=list_error, form=form, mechanisms=list(ScramMechanism),
                          min_iterations=MIN_ITERATIONS, max_iterations=MAX_ITERATIONS)

    def mechanism_of(form) -> ScramMechanism:
        raw = forms.text(form, "mechanism", "mechanism", required=True, max_len=40).strip()
        for m in ScramMechanism:
            if m.value == raw:
                return m
        raise FormError(f"mechanism {raw[:40]!r} is not SCRAM-SHA-256 or SCRAM-SHA-512")

    def user_of(form) -> str:
        user = forms.text(form, "user", "user name", required=True, max_len=1000).strip()
        if not user:
            raise FormError("the user name is empty")
        return user

    @web.page("SCRAM users")
    async def users(request: Request):
        return await users_page(request)

    @web.page("Add SCRAM user")
    async def add_user(request: Request):
        form = await form_of(request)
        try:
            user = user_of(form)
            mechanism = mechanism_of(form)
            iterations = forms.int_field(form, "iterations", "iterations", low=MIN_ITERATIONS,
                                         high=MAX_ITERATIONS, default=8192)
            password = forms.text(form, "password", "password", required=True, max_len=1000)
            await admin.alter_user_scram_credentials(upsertions=[(user, mechanism, iterations, password)])
        except (FormError, KafkaError) as e:
            return await users_page(request, 400 if isinstance(e, FormError) else 409,
                                    f"User not saved: {describe_error(e) if isinstance(e, KafkaError) else e}", form)
        return web.done("/users", f"Saved the {mechanism.value} credential of {user}")

    @web.page("Remove SCRAM user")
    async def remove_user(request: Request):
        form = await form_of(request)
        try:
            user = user_of(form)
            mechanism = mechanism_of(form)
            await admin.alter_user_scram_credentials(deletions=[(user, mechanism)])
        except (FormError, KafkaError) as e:
            return await users_page(request, 400 if isinstance(e, FormError) else 409,
                                    f"Credential not removed: {describe_error(e) if isinstance(e, KafkaError) else e}")
        return web.done("/users", f"Removed the {mechanism.value} credential of {user}")

    return [Route("/acls", acls), Route("/acls/add", add_acl, methods=["POST"]),
            Route("/acls/remove", remove_acl, methods=["POST"]),
            Route("/users", users), Route("/users/add", add_user, methods=["POST"]),
            Route("/users/remove", remove_user, methods=["POST"])]
