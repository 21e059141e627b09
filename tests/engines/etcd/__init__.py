"""tests.engines.etcd."""
