"""The service contract that the daemon, the CLI and the HTTP API share: the public records
(`records`), the configuration (`config`), the decide path (`decide`), the review queue's rules
(`review`), the hashes of the HTTP API's secrets (`passwords`) and the Host headers a server
answers (`hosts`). `__all__` names these modules rather than re-exporting their names: `config`
and `decide` load numpy, SciPy and the naive-Bayes model, which the users of `records`,
`passwords` or `hosts` alone (the HTTP API's bodies and authentication) should not."""

__all__ = ["config", "decide", "hosts", "passwords", "records", "review"]
