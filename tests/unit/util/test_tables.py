"""One writer of text tables for every command that prints one."""

from __future__ import annotations

from kubecore._util.tables import text_table


def test_columns_are_padded_to_their_widest_cell_without_trailing_spaces() -> None:
    table = text_table(["NAME", "STATUS"], [["web-1", "Running"], ["a", ""]])
    assert table == "NAME    STATUS\nweb-1   Running\na\n"
    assert text_table(["NAME"], []) == "NAME\n"


def test_the_pod_table_runtimes_and_etcd_tables_use_the_one_writer() -> None:
    import kubecore.cli
    import kubecore_etcd._cli as etcd
    from kubecore._cli import output

    assert kubecore.cli.text_table is text_table
    for module in (output, etcd):
        assert vars(module)["text_table"] is text_table
    assert "_table" not in vars(etcd)


def test_a_pod_documents_ready_and_restarts_cells_are_read_one_way() -> None:
    from kubecore._util.tables import ready_and_restarts

    pod = {
        "spec": {"containers": [{"name": "a"}, {"name": "b"}]},
        "status": {"containerStatuses": [{"ready": True, "restartCount": 2}, {"ready": False}]},
    }
    assert ready_and_restarts(pod) == ("1/2", 2)
    assert ready_and_restarts({}) == ("0/0", 0)
