"""A client generated from the live schema by openapi-python-client builds and works.

The generator runs on /v1/openapi.json as the service serves it; the generated package
is imported, must have one module per operationId, and its ``sample_quote`` is called
through the service itself (httpx's WSGI transport into this Django, no network).
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import httpx
import pytest
from django.core.wsgi import get_wsgi_application

# transaction=True: the raw WSGI handler closes a connection that is inside a test
# transaction when a request ends (Django's test client unhooks that; httpx's WSGI transport
# does not), which PostgreSQL then answers as "connection is closed".
pytestmark = pytest.mark.django_db(transaction=True)

PACKAGE = "attest_generated"


@pytest.fixture
def generated(api, tmp_path, monkeypatch):
    schema = json.loads(api.get("/v1/openapi.json").content)
    (tmp_path / "openapi.json").write_text(json.dumps(schema))
    paths = ["--path", str(tmp_path / "openapi.json"), "--output-path", str(tmp_path / PACKAGE)]
    run = subprocess.run(
        [sys.executable, "-m", "openapi_python_client", "generate", "--meta", "none", *paths],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    monkeypatch.syspath_prepend(str(tmp_path))
    yield schema, importlib.import_module(PACKAGE)
    for name in [name for name in sys.modules if name.split(".")[0] == PACKAGE]:
        del sys.modules[name]


def test_the_generated_client_names_every_operation_and_calls_one(generated):
    schema, package = generated
    for item in schema["paths"].values():
        for method, operation in item.items():
            if method not in {"get", "post", "put", "patch", "delete"}:
                continue
            tag = operation["tags"][0].lower().replace(" ", "_")
            module = importlib.import_module(f"{PACKAGE}.api.{tag}.{operation['operationId']}")
            assert callable(module.sync_detailed), operation["operationId"]

    verify_quote = importlib.import_module(f"{PACKAGE}.api.verification.verify_quote")
    # The request body's model, as the generator named it from the schema's component.
    body = verify_quote._get_kwargs.__annotations__["body"](
        url="https://example.org/", quote="a quote"
    )
    request = verify_quote._get_kwargs(body=body)
    assert (request["method"], request["url"]) == ("post", "/v1/verify/quote")
    assert request["json"]["url"] == "https://example.org/"
    assert request["json"]["quote"] == "a quote"

    client = package.Client(base_url="http://testserver")
    client.set_httpx_client(
        httpx.Client(
            base_url="http://testserver", transport=httpx.WSGITransport(get_wsgi_application())
        )
    )
    sample = importlib.import_module(f"{PACKAGE}.api.samples.sample_quote")
    answer = sample.sync(client=client)
    assert answer.result.match.value == "fuzzy"
    assert answer.receipt.count(".") == 2
