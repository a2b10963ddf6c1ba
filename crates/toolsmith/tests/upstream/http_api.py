"""A FastAPI application the `http` tool tests call and import (its /openapi.json).

Run: python http_api.py → prints `PORT <n>` once listening on 127.0.0.1. Every answer echoes
what arrived, so the tests can check the exact request toolsmith sent (the raw path, the
query as sent, the headers).
"""

import socket
import sys
import time
from typing import Annotated, Optional

import uvicorn
from fastapi import FastAPI, Header, HTTPException, Query, Request
from fastapi.responses import PlainTextResponse, RedirectResponse, Response
from fastapi.security import APIKeyHeader, HTTPBearer
from fastapi import Depends
from pydantic import BaseModel, Field

TOKEN = "tok-" + "s3cret-bearer"
API_KEY = "key-" + "s3cret-header"

app = FastAPI(title="toolsmith test API", version="1.0.0")
bearer = HTTPBearer(auto_error=False)
api_key = APIKeyHeader(name="X-Api-Key", auto_error=False)


def seen(request: Request) -> dict:
    return {
        "raw_path": request.scope["raw_path"].decode(),
        "query": request.scope["query_string"].decode(),
        "authorization": request.headers.get("authorization"),
        "x_api_key": request.headers.get("x-api-key"),
    }


class Dimensions(BaseModel):
    width: float = Field(gt=0)
    height: float = Field(gt=0)


class Item(BaseModel):
    name: str = Field(description="The item's name.", min_length=1)
    tags: list[str] = []
    dimensions: Dimensions
    note: Optional[str] = None


@app.get("/repos/{owner}/{repo}/issues/{number}", operation_id="get_issue", tags=["issues"])
def get_issue(
    owner: str,
    repo: str,
    number: int,
    request: Request,
    labels: Annotated[list[str], Query(description="Labels to show")] = [],
    credentials=Depends(bearer),
):
    """Get one issue of a repository."""
    if credentials is None or credentials.credentials != TOKEN:
        raise HTTPException(status_code=401, detail="bad or missing bearer token")
    if number == 404:
        raise HTTPException(status_code=404, detail=f"issue {number} of {owner}/{repo} not found")
    return {"owner": owner, "repo": repo, "number": number, "labels": labels, "seen": seen(request)}


@app.post("/items", operation_id="create_item", tags=["items"], status_code=201)
def create_item(item: Item, request: Request, key=Depends(api_key)):
    """Create an item."""
    if key != API_KEY:
        raise HTTPException(status_code=403, detail="bad or missing API key")
    return {"created": item.model_dump(), "seen": seen(request)}


@app.get("/search", operation_id="search", tags=["items"])
def search(
    request: Request,
    q: Annotated[str, Query(description="What to look for")],
    limit: Annotated[int, Query(ge=1, le=50)] = 10,
    x_trace: Annotated[Optional[str], Header()] = None,
):
    """Search items."""
    return {"q": q, "limit": limit, "trace": x_trace, "seen": seen(request)}


@app.get("/echo/{segment:path}", operation_id="echo_segment")
def echo_segment(segment: str, request: Request):
    """Echo one path segment as decoded and as sent."""
    return {"segment": segment, "seen": seen(request)}


@app.get("/redirect", operation_id="redirect_here")
def redirect_here(to: str = "/echo/after"):
    """Redirect to `to`."""
    return RedirectResponse(to, status_code=302)


@app.get("/headers", operation_id="show_headers")
def show_headers(request: Request):
    """The request's credentials as they arrived."""
    return seen(request)


@app.get("/large", operation_id="large")
def large(size: int = 2_000_000):
    """A long text body."""
    return PlainTextResponse("x" * size)


@app.get("/text", operation_id="text")
def text():
    """A plain text body."""
    return PlainTextResponse("plain words")


@app.get("/binary", operation_id="binary")
def binary():
    """Bytes that are not text."""
    return Response(bytes(range(256)), media_type="image/png")


@app.get("/slow", operation_id="slow")
def slow(seconds: float = 5.0):
    """Answers late."""
    time.sleep(seconds)
    return {"slept": seconds}


@app.delete("/items/{item_id}", operation_id="delete_item", tags=["items"], deprecated=True)
def delete_item(item_id: int):
    """Delete an item (deprecated)."""
    return {"deleted": item_id}


if __name__ == "__main__":
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app, log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])
    sys.exit(0)
