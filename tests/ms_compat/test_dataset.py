"""In-memory datasets: NumpySlicesDataset and GeneratorDataset with batch,
shuffle, map and repeat, read as Tensors or NumPy arrays.

Every expected value is computed from the source data with NumPy directly;
shuffled orders are checked to be permutations, reproducible under
``set_seed`` and fresh each epoch.
"""
import numpy as np
import pytest

import s2sad
from s2sad import dataset as ds
from s2sad import nn, Tensor

X = np.arange(14, dtype=np.float32).reshape(7, 2)
Y = np.arange(7, dtype=np.int32) * 10


def _read(dataset, **kw):
    return [list(row) for row in dataset.create_tuple_iterator(output_numpy=True, **kw)]


def test_slices_in_order_batched_with_a_smaller_last_batch():
    data = ds.NumpySlicesDataset((X, Y), column_names=["x", "y"], shuffle=False).batch(3)
    assert data.get_dataset_size() == 3 and data.get_col_names() == ["x", "y"]
    rows = _read(data)
    assert [r[0].shape for r in rows] == [(3, 2), (3, 2), (1, 2)]
    np.testing.assert_array_equal(np.concatenate([r[0] for r in rows]), X)
    np.testing.assert_array_equal(np.concatenate([r[1] for r in rows]), Y)
    assert rows[0][0].dtype == np.float32 and rows[0][1].dtype == np.int32


def test_drop_remainder():
    data = ds.NumpySlicesDataset((X, Y), shuffle=False).batch(3, drop_remainder=True)
    assert data.get_dataset_size() == 2 and len(_read(data)) == 2
    assert data.get_col_names() == ["column_0", "column_1"]


def test_rows_are_tensors_by_default_and_copies_of_the_data():
    data = ds.NumpySlicesDataset({"x": X, "y": Y}, shuffle=False)
    rows = list(data.create_dict_iterator())
    assert len(rows) == 7 and set(rows[0]) == {"x", "y"}
    assert isinstance(rows[2]["x"], Tensor) and rows[2]["x"].dtype == s2sad.float32
    np.testing.assert_array_equal(rows[2]["x"].asnumpy(), X[2])
    assert rows[2]["y"].shape == () and int(rows[2]["y"]) == 20
    rows[2]["x"][0] = -1.0
    assert X[2, 0] == 4.0                          # the user's array is untouched
    first = next(iter(data))                       # a plain for reads lists of Tensors
    assert isinstance(first, list) and isinstance(first[0], Tensor)


def test_a_list_is_one_column():
    data = ds.NumpySlicesDataset([1.0, 2.0, 3.0], column_names=["v"], shuffle=False)
    assert [float(r["v"]) for r in data.create_dict_iterator(output_numpy=True)] == [1, 2, 3]


def test_bad_columns_are_refused():
    with pytest.raises(ValueError, match="same length"):
        ds.NumpySlicesDataset((X, Y[:3]))
    with pytest.raises(ValueError, match="'column_names' names 1 columns but the data has 2"):
        ds.NumpySlicesDataset((X, Y), column_names=["x"])
    with pytest.raises(ValueError, match="sampler"):
        ds.NumpySlicesDataset(X, sampler=object())


def _order(data):
    return [int(r[1]) for r in _read(data)]


def test_shuffle_is_the_default_a_permutation_reproducible_and_fresh_each_epoch():
    data = ds.NumpySlicesDataset((np.zeros(40), np.arange(40)))
    s2sad.set_seed(5)
    first, second = _order(data), _order(data)
    assert sorted(first) == list(range(40)) and sorted(second) == list(range(40))
    assert first != list(range(40)) and first != second
    s2sad.set_seed(5)
    assert _order(data) == first and _order(data) == second


def test_asking_the_size_draws_nothing_from_the_shuffling_stream():
    data = ds.NumpySlicesDataset((np.zeros(20), np.arange(20))).shuffle(4).batch(3)
    s2sad.set_seed(1)
    want = [r[1].tolist() for r in _read(data)]
    s2sad.set_seed(1)
    assert data.get_dataset_size() == 7
    assert [r[1].tolist() for r in _read(data)] == want


def test_seeding_does_not_move_the_weights():
    s2sad.set_seed(2)
    before = nn.Dense(3, 2).weight.asnumpy()
    s2sad.set_seed(2)
    _order(ds.NumpySlicesDataset((np.zeros(5), np.arange(5))))
    np.testing.assert_array_equal(nn.Dense(3, 2).weight.asnumpy(), before)


def test_buffered_shuffle_is_a_permutation_that_moves_rows_at_most_a_buffer_ahead():
    data = ds.NumpySlicesDataset((np.zeros(30), np.arange(30)), shuffle=False).shuffle(4)
    s2sad.set_seed(0)
    order = _order(data)
    assert sorted(order) == list(range(30)) and order != list(range(30))
    # a row leaves the buffer only after it entered: row k enters at step k - 3 or later
    assert all(position >= row - 3 for position, row in enumerate(order))
    s2sad.set_seed(0)
    assert _order(data) == order
    with pytest.raises(ValueError, match="buffer_size"):
        data.shuffle(1)


def test_map_applies_callables_in_order_to_the_named_columns():
    data = ds.NumpySlicesDataset({"x": X, "y": Y}, shuffle=False)
    mapped = data.map([lambda v: v * 2, lambda v: v + 1], input_columns="x")
    rows = _read(mapped)
    np.testing.assert_array_equal(np.stack([r[0] for r in rows]), X * 2 + 1)
    np.testing.assert_array_equal([r[1] for r in rows], Y)
    both = data.map(lambda x, y: (x.sum(), y * 2), input_columns=["x", "y"],
                    output_columns=["s", "y2"])
    assert both.get_col_names() == ["s", "y2"]
    rows = list(both.create_dict_iterator(output_numpy=True))
    np.testing.assert_array_equal([r["s"] for r in rows], X.sum(axis=1))
    np.testing.assert_array_equal([r["y2"] for r in rows], Y * 2)
    assert data.map(np.float64, input_columns="y").get_col_names() == ["x", "y"]
    assert _read(data.map(lambda v: v * 0))[0][0].tolist() == [0.0, 0.0]   # first column


def test_map_errors():
    data = ds.NumpySlicesDataset({"x": X, "y": Y}, shuffle=False)
    with pytest.raises(TypeError, match="callables"):
        data.map("normalize", input_columns="x")
    with pytest.raises(ValueError, match="not in the dataset"):
        data.map(abs, input_columns="z")
    with pytest.raises(ValueError, match="returned 2 values for the 1 columns"):
        _read(data.map(lambda v: (v, v), input_columns="x"))


def test_generator_function_is_called_each_epoch():
    calls = []

    def source():
        calls.append(1)
        for i in range(5):
            yield np.full(2, i, np.float32), np.array(i)

    data = ds.GeneratorDataset(source, ["x", "i"], shuffle=False).batch(2)
    it = data.create_tuple_iterator(num_epochs=2, output_numpy=True)
    epochs = [[r[1].tolist() for r in it] for _ in range(2)]
    assert epochs == [[[0, 1], [2, 3], [4]]] * 2 and len(calls) == 2
    with pytest.raises(RuntimeError, match="num_epochs"):
        next(it)
    assert data.get_dataset_size() == 3


def test_indexable_source_can_be_shuffled_and_single_columns_need_no_tuple():
    class Squares:
        def __getitem__(self, i):
            return np.array(i * i)

        def __len__(self):
            return 6

    in_order = ds.GeneratorDataset(Squares(), column_names=["sq"], shuffle=False)
    assert [int(r[0]) for r in _read(in_order)] == [0, 1, 4, 9, 16, 25]
    shuffled = ds.GeneratorDataset(Squares(), column_names=["sq"])
    s2sad.set_seed(3)
    values = [int(r[0]) for r in _read(shuffled)]
    assert sorted(values) == [0, 1, 4, 9, 16, 25]
    assert ds.GeneratorDataset(Squares(), ["sq"], num_samples=2).get_dataset_size() == 2


def test_generator_errors():
    def pairs():
        yield 1, 2

    with pytest.raises(ValueError, match="column_names"):
        ds.GeneratorDataset(pairs)
    with pytest.raises(ValueError, match="shuffle=True needs"):
        ds.GeneratorDataset(pairs, ["a", "b"], shuffle=True)
    with pytest.raises(ValueError, match="has 2 values but column_names names 3"):
        _read(ds.GeneratorDataset(pairs, ["a", "b", "c"]))
    with pytest.raises(TypeError, match="read only once.*source=gen, not gen"):
        ds.GeneratorDataset(pairs(), ["a", "b"])
    with pytest.raises(ValueError, match="different shapes"):
        _read(ds.GeneratorDataset(lambda: iter([(np.ones(2),), (np.ones(3),)]), ["a"])
              .batch(2))


def test_repeat_and_column_selection():
    data = ds.NumpySlicesDataset((X, Y), column_names=["x", "y"], shuffle=False).repeat(2)
    assert data.get_dataset_size() == 14
    rows = _read(data, columns=["y"])
    assert [int(r[0]) for r in rows] == list(Y) * 2


def test_a_quick_start_training_loop_fits_a_line():
    s2sad.set_seed(0)
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (64, 1)).astype(np.float32)
    y = (3 * x + 0.5).astype(np.float32)
    data = ds.NumpySlicesDataset({"data": x, "label": y}).batch(16)
    net = nn.Dense(1, 1)
    loss_net = nn.WithLossCell(net, nn.MSELoss())
    train = nn.TrainOneStepCell(loss_net, nn.SGD(net.trainable_params(), learning_rate=0.3))
    train.set_train()
    for _ in range(40):
        for batch in data.create_dict_iterator():
            train(batch["data"], batch["label"])
    # both: a training result, not a gradient check -- 40 epochs of SGD end within 1e-2 of
    # the line the data lie on (gradients are checked exactly elsewhere)
    np.testing.assert_allclose(net.weight.asnumpy(), [[3.0]], atol=1e-2)
    np.testing.assert_allclose(net.bias.asnumpy(), [0.5], atol=1e-2)
