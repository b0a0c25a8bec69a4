"""The daemon (`filterd run`): the consume loop both roles share (`loop`), the scorer and the
learner, the scorer's model state, the learner's monitor, and the supervisor that runs them as
threads of one process (`supervisor.Daemon`)."""
