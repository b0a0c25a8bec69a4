"""The daemon (`filterd run`): the consume loop both roles share (`loop`), the scorer and the
learner, the scorer's model state (`model_state`), the learner's monitor, the partitions held
at an undecodable batch (`stuck`), and the supervisor that runs them as threads of one process
(`supervisor.Daemon`). `__all__` names the modules other packages use rather than re-exporting
their names: they import Kafka's client, SQLAlchemy and numpy, which each user should load only
with the module it needs."""

__all__ = ["model_state", "scorer", "stuck", "supervisor"]
