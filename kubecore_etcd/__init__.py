"""kubecore_etcd."""
