"""Topics: the list (partitions, replication factor, size, messages,
under-replicated marks), create, delete with confirmation, and a topic's
page with each partition's leader, replicas, ISR, log start and end and
size, and its configs with their source, editable."""

from __future__ import annotations

from urllib.parse import quote

from starlette.requests import Request
from starlette.routing import Route

from kavka.common.errors import KafkaError
from kavka.console import forms
from kavka.console.forms import FormError
from kavka.console.service import CONFIG_SOURCES, describe_error
from kavka.console.web import Web, form_of

MAX_PARTITIONS = 100_000
MAX_RF = 1000


def routes(web: Web) -> list[Route]:
    async def listing(request: Request, status: int = 200, error: str | None = None, form=None):
        try:
            rows, errors = await web.service.topics()
        except KafkaError as e:
            rows, errors = [], [describe_error(e)]
        return web.render(request, "topics.html", status, rows=rows, errors=errors, error=error, form=form or {})

    @web.page("Topics")
    async def topics(request: Request):
        if request.method == "GET":
            return await listing(request)
        form = await form_of(request)
        try:
            name = forms.topic_name(forms.text(form, "name", "topic name", max_len=400).strip())
            partitions = forms.int_field(form, "partitions", "partitions", low=1, high=MAX_PARTITIONS, default=1)
            rf = forms.int_field(form, "replication_factor", "replication factor", low=1, high=MAX_RF, default=1)
            configs = forms.key_values(forms.text(form, "configs", "configs", max_len=100_000), "configs")
            await web.service.create_topic(name, partitions, rf, configs)
        except (FormError, KafkaError) as e:
            message = str(e) if isinstance(e, FormError) else describe_error(e)
            return await listing(request, 400 if isinstance(e, FormError) else 409,
                                 f"Topic not created: {message}", form)
        return web.done(f"/topics/{quote(name)}", f"Created topic {name} ({partitions} partitions, RF {rf})")

    async def detail(request: Request, status: int = 200, error: str | None = None):
        name = forms.topic_name(request.path_params["name"])
        view = await web.service.topic(name)
        return web.render(request, "topic.html", status, view=view, sources=CONFIG_SOURCES, error=error)

    @web.page("Topic")
    async def topic(request: Request):
        return await detail(request)

    @web.page("Delete topic")
    async def delete(request: Request):
        name = forms.topic_name(request.path_params["name"])
        form = await form_of(request)
        if forms.text(form, "confirm", "confirmation", max_len=400).strip() != name:
            return await detail(request, 400, f"Not deleted: type the topic's name ({name}) to confirm")
        await web.service.delete_topic(name)
        return web.done("/topics", f"Deleted topic {name}")

    @web.page("Topic config")
    async def config(request: Request):
        name = forms.topic_name(request.path_params["name"])
        form = await form_of(request)
        key = forms.text(form, "key", "config name", required=True, max_len=200).strip()
        delete = form.get("action") == "delete"
        value = None if delete else forms.text(form, "value", "config value", max_len=100_000).strip()
        try:
            await web.service.set_topic_config(name, key, value)
        except KafkaError as e:
            return await detail(request, 409, f"Config not changed: {describe_error(e)}")
        what = f"Removed the override of {key}" if delete else f"Set {key}={value}"
        return web.done(f"/topics/{quote(name)}", f"{what} on topic {name}")

    return [Route("/topics", topics, methods=["GET", "POST"]),
            Route("/topics/{name}", topic),
            Route("/topics/{name}/delete", delete, methods=["POST"]),
            Route("/topics/{name}/config", config, methods=["POST"])]
