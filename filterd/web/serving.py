"""The HTTP API of one process, wired: `Api(config, model, scoring, tokenizer, log).start()`.

`filterd run` (with `[http] enabled`) hands it the scorer's model and entity memory
(`evidence`); `filterd serve` one it keeps synced itself, without entity memory. Both listen on
`http.host:http.port` and publish labels with a publisher of their own (`LabelSender`), closed
at `stop()`.
"""

from __future__ import annotations

from typing import Self

from structlog.typing import FilteringBoundLogger

from filterd.kafka.publisher import Publisher
from filterd.observe.metrics import Metrics
from filterd.service.config import Config
from filterd.service.decide import EvidenceOf, OverridesOf
from filterd.store.handle import ModelStore
from filterd.tokenize import Tokenizer
from filterd.web.app import create_app
from filterd.web.auth import Authenticator
from filterd.web.context import Scoring, WebContext
from filterd.web.labels import LabelSender
from filterd.web.server import HttpServer


class Api:
    """The API's server and its feedback publisher."""

    def __init__(
        self,
        config: Config,
        model: ModelStore,
        scoring: Scoring,
        tokenizer: Tokenizer,
        log: FilteringBoundLogger,
        metrics: Metrics | None = None,
        evidence: EvidenceOf | None = None,
        overrides: OverridesOf | None = None,
    ) -> None:
        http = config.http
        self.log = log
        auth = Authenticator(http.tokens, http.users)
        # labels go through kafka-python whatever `kafka.client` says: its probe keeps a label
        # from a stalled broker that would append it after the client was told 503
        labels = LabelSender(Publisher(config.kafka), http.publish_seconds)
        self.context = WebContext(
            config, model, scoring, tokenizer, labels, auth, log, metrics, evidence, overrides
        )
        app = create_app(self.context)
        self.server = HttpServer(
            app, http.host, http.port, http.max_connections, http.request_seconds
        )

    @property
    def port(self) -> int:
        return self.server.port

    def start(self) -> Self:
        """Listen (OSError if the address cannot be bound)."""
        self.server.start()
        auth = self.context.auth
        self.log.info(
            "http api listening",
            host=self.server.host,
            port=self.server.port,
            credentials=auth.configured,
        )
        if not auth.configured:
            self.log.warning(
                "http api: no credentials in [http] tokens or users: every request "
                "but /v1/openapi.json is refused (401)"
            )
        return self

    def stop(self) -> None:
        self.server.stop()
        self.context.labels.close()
        self.context.auth.close()
