"""How the JobSet trigger waits: one shared informer per cluster and namespace, and the
per-job watchers it feeds (pod start-up, queue wait, restarts, leader logs, the run clock).

Nothing here is serialized: the trigger classes in ``triggers/`` hold the plain data and run
these, so these modules may move between releases.
"""
