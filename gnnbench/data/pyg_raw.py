"""What gnnbench knows about how PyTorch Geometric's dataset classes read their raw files (generator ``pyg``).

A PyG class reads the files it downloads into its ``raw`` folder in its ``process`` method, and some classes unpickle
them (``pickle.load``, ``np.load(allow_pickle=True)``): a tampered file would run code. The ``pyg`` generator
(:mod:`gnnbench.data.generators.pyg`) lets a class's ``process`` read raw files only when this table vouches for
them. Keys name the class that defines the ``process`` method a dataset uses (``module.QualifiedName``).

:data:`AUDITED`
    classes whose ``process`` reads raw files without running code: text, ``np.load`` without ``allow_pickle``,
    ``torch.load`` (which gnnbench restricts to ``weights_only=True`` while a class is constructed). Established by
    reading their source in torch_geometric :data:`AUDITED_WITH`; the value says how the files are read.
:data:`PINNED`
    classes whose ``process`` unpickles raw files: the SHA-256 of each raw file gnnbench verified, by file name. A raw
    file without a pin, or with other bytes, is refused before ``process`` reads it.
:data:`ALTERNATIVES`
    gnnbench's own generator that reads the same published files through its allow-list (named when refusing).

Data only: this module imports nothing. It also holds the Planetoid files' pins, which generator planetoid verifies
too (one place for a published checksum).
"""

PLANETOID_SHA256: dict[str, dict[str, str]] = {  # kimiyoung/planetoid@af6abf46 (the files PyG downloads)
    "cora": {
        "x": "23cfa55d91c6f624233f5eb7b6e3f141f1bd2b2ae39608a63cf5d084bb27baab",
        "y": "94465c14eb53e04ca262198dcbb2521ee8af60fb3f3d546cd6ca24a511b0e7d1",
        "tx": "b9afbaa4a400df991f6f02ef677e1e44da55ffc04801fd02f9e673987829226a",
        "ty": "41f5ac76596a1699cc33f53084a2419e92961c42bb75f36fc38e616d348532ad",
        "allx": "9419ba2f26f5c35243db64aba110e0f35a04851609e0dc5433450676ca6b8543",
        "ally": "2b998f5cc7fedc86e7f97ca2498f47a1ffc1462c29e2d578b23bf3f62b6e7d71",
        "graph": "58f13302f39dde8852dad6fe6d15b89b077b6d7f837626bce671ef80344b383d",
        "test.index": "297ce89af2b51a6a194181c7dbe1796c6a1cf9cd9349a88383b1b1e227867875",
    },
    "citeseer": {
        "x": "d20de19150741e555de0ed037195630fc194114ebc7fd72ced62810148aa22f6",
        "y": "8ba87e515d8e3ee3cf52f6d2c5b86aa73f11ecad825a808455209ec26cd54924",
        "tx": "539a8906a2da97628d212f2fdd668c109a8b3f0d36574b59e5d3fd5b5303da21",
        "ty": "55e5bd1ba1e733a04598753ad1a8d57957f4b8f89e74519f41f4f4938767e4ce",
        "allx": "2ac30345d95c9ec933a817ee0bdd6a5f077f8c184a20e696910192d534414668",
        "ally": "f704b2d986dde6c2669934de1f3ae5696a6cf9455c0f6b2646a2d135ea0a1c95",
        "graph": "d79a4ef9d3e7169aee8946145f6b7306e35bc79bffad26346cfb94e10e9912a7",
        "test.index": "2af990671580b6b2df5d158d1038f8292e30c9cd821b5453f399659b25b723d4",
    },
}

AUDITED_WITH = "2.8.1"  # the torch_geometric release whose sources were read for AUDITED

AUDITED: dict[str, str] = {
    "torch_geometric.datasets.tu_dataset.TUDataset": "text files (torch_geometric/io/tu.py: read_txt_array)",
    "torch_geometric.datasets.citation_full.CitationFull": "one .npz, np.load without allow_pickle "
                                                           "(torch_geometric/io/npz.py)",
    "torch_geometric.datasets.citation_full.CoraFull": "CitationFull's process",
    "torch_geometric.datasets.amazon.Amazon": "one .npz, np.load without allow_pickle (torch_geometric/io/npz.py)",
    "torch_geometric.datasets.coauthor.Coauthor": "one .npz, np.load without allow_pickle (torch_geometric/io/npz.py)",
    "torch_geometric.datasets.webkb.WebKB": "two text files and ten .npz split files, np.load without allow_pickle",
    "torch_geometric.datasets.actor.Actor": "two text files and ten .npz split files, np.load without allow_pickle",
    "torch_geometric.datasets.heterophilous_graph_dataset.HeterophilousGraphDataset": "one .npz, np.load without "
                                                                                      "allow_pickle",
    "torch_geometric.datasets.sbm_dataset.StochasticBlockModelDataset": "no raw files: graphs drawn in process",
    "torch_geometric.datasets.sbm_dataset.RandomPartitionGraphDataset": "StochasticBlockModelDataset's process",
}

PINNED: dict[str, dict[str, str]] = {
    # Planetoid unpickles ind.{name}.{x,y,tx,ty,allx,ally,graph} (torch_geometric/io/planetoid.py): the files of
    # kimiyoung/planetoid@af6abf46, which PyG downloads (those generator planetoid verifies)
    "torch_geometric.datasets.planetoid.Planetoid": {
        f"ind.{name}.{ext}": sha for name, table in PLANETOID_SHA256.items() for ext, sha in table.items()},
}

ALTERNATIVES: dict[str, str] = {
    "torch_geometric.datasets.planetoid.Planetoid": "use generator planetoid (standardize: false), which reads the "
                                                    "same ind.* files through gnnbench's allow-list",
    "torch_geometric.datasets.zinc.ZINC": "use generator zinc, which reads the same molecules.zip through "
                                          "gnnbench's allow-list",
    "torch_geometric.datasets.aqsol.AQSOL": "use generator aqsol, which reads the same archive through "
                                            "gnnbench's allow-list",
    "torch_geometric.datasets.gnn_benchmark_dataset.GNNBenchmarkDataset": (
        "use generator released, which reads the same published graphs through gnnbench's allow-list"),
}
