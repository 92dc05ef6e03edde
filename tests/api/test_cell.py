import numpy as np
import pytest

from s2sad.nn import Cell
from s2sad.tensor import Parameter, ParameterTuple, Tensor


class Dense(Cell):
    def __init__(self, n_in, n_out, has_bias=True):
        super().__init__()
        self.weight = Parameter(np.ones((n_out, n_in), np.float32))
        if has_bias:
            self.bias = Parameter(np.zeros(n_out, np.float32))
        self.has_bias = has_bias

    def construct(self, x):
        y = x @ self.weight.T
        return y + self.bias if self.has_bias else y

    def extend_repr(self):
        return 'in={}, out={}'.format(self.weight.shape[1], self.weight.shape[0])


class Net(Cell):
    def __init__(self):
        super(Net, self).__init__()
        self.z = Parameter(Tensor(np.array([1.0], np.float32)))
        self.fc1 = Dense(2, 3)
        self.fc2 = Dense(3, 1)

    def construct(self, x):
        return self.fc2(self.fc1(x)) * self.z


class Leaf(Cell):
    def construct(self, x):
        return x


def test_registration_and_naming():
    net = Net()
    assert list(net._params) == ['z'] and net._params['z'] is net.z
    assert list(net._cells) == ['fc1', 'fc2']
    assert net.z.name == 'z'
    assert net.fc1.weight.name == 'fc1.weight' and net.fc2.bias.name == 'fc2.bias'
    assert net.__dict__['z'] is net.z  # plain attribute read
    assert net.training is False


def test_explicit_names_kept_for_own_params():
    class C(Cell):
        def __init__(self):
            super().__init__()
            self.w = Parameter(1.0, name='custom')

    assert C().w.name == 'custom'


def test_parameters_and_names_order_and_prefix():
    net = Net()
    names = [n for n, _ in net.parameters_and_names()]
    assert names == ['z', 'fc1.weight', 'fc1.bias', 'fc2.weight', 'fc2.bias']
    assert [n for n, _ in net.parameters_and_names(name_prefix='net')] == \
        ['net.z', 'net.fc1.weight', 'net.fc1.bias', 'net.fc2.weight', 'net.fc2.bias']
    assert [n for n, _ in net.parameters_and_names(expand=False)] == ['z']
    params = list(net.get_parameters())
    assert params[0] is net.z and params[1] is net.fc1.weight and len(params) == 5
    assert list(net.get_parameters(expand=False)) == [net.z]
    # Names are unique, so the optimizer's ParameterTuple accepts them.
    assert len(ParameterTuple(net.trainable_params())) == 5


def test_deeper_nesting_names():
    class Outer(Cell):
        def __init__(self):
            super().__init__()
            self.block = Net()

    o = Outer()
    assert o.block.fc1.weight.name == 'block.fc1.weight'
    assert [n for n, _ in o.parameters_and_names()][:2] == ['block.z', 'block.fc1.weight']


def test_auto_prefix_off():
    class NoPrefix(Cell):
        def __init__(self):
            super().__init__(auto_prefix=False)
            self.fc = Dense(1, 1)

    assert NoPrefix().fc.weight.name == 'weight'


def test_trainable_and_untrainable():
    net = Net()
    net.fc1.bias.requires_grad = False
    trainable = net.trainable_params()
    assert isinstance(trainable, list)
    assert all(p is not net.fc1.bias for p in trainable) and len(trainable) == 4
    assert net.untrainable_params() == [net.fc1.bias]
    assert net.trainable_params(recurse=False) == [net.z]


def test_shared_parameter_deduplicated():
    shared = Parameter(np.ones(2, np.float32), name='shared')

    class User(Cell):
        def __init__(self):
            super().__init__()
            self.w = shared

    class Two(Cell):
        def __init__(self):
            super().__init__()
            self.a = User()
            self.b = User()

    net = Two()
    pairs = list(net.parameters_and_names())
    assert len(pairs) == 1 and pairs[0][0] == 'a.w' and pairs[0][1] is shared
    assert net.trainable_params() == [shared]


def test_shared_cell_visited_once():
    class Twice(Cell):
        def __init__(self):
            super().__init__()
            self.leaf = Dense(1, 1)
            self.alias = self.leaf

    t = Twice()
    assert [n for n, _ in t.cells_and_names()] == ['', 'leaf']
    assert len(list(t.get_parameters())) == 2


def test_cells_and_names_and_children():
    net = Net()
    got = list(net.cells_and_names())
    assert [n for n, _ in got] == ['', 'fc1', 'fc2']
    assert got[0][1] is net and got[1][1] is net.fc1
    assert [n for n, _ in net.cells_and_names(name_prefix='root')] == \
        ['root', 'root.fc1', 'root.fc2']
    assert list(net.cells()) == [net.fc1, net.fc2]
    nc = net.name_cells()
    assert list(nc.keys()) == ['fc1', 'fc2'] and nc['fc2'] is net.fc2
    nc.pop('fc1')
    assert 'fc1' in net._cells  # a copy, not the registry


def test_reassign_and_delete_unregister():
    net = Net()
    net.z = 3.0
    assert 'z' not in net._params and net.z == 3.0
    net.fc1 = None
    assert 'fc1' not in net._cells and net.fc1 is None
    net.fc2 = Parameter(1.0)
    assert 'fc2' not in net._cells and net._params['fc2'] is net.fc2
    net.w = Parameter(2.0)
    del net.w
    assert 'w' not in net._params and not hasattr(net, 'w')
    del net.fc2
    assert 'fc2' not in net._params


def test_insert_helpers():
    c = Leaf()
    c.insert_child_to_cell('0', Dense(1, 1))
    c.insert_param_to_cell('p', Parameter(1.0))
    assert list(c._cells) == ['0'] and c._params['p'].name == 'p'
    assert [n for n, _ in c.parameters_and_names()] == ['p', '0.weight', '0.bias']
    with pytest.raises(TypeError):
        c.insert_child_to_cell('x', 3)
    with pytest.raises(TypeError):
        c.insert_param_to_cell('x', Tensor(1.0))


def test_call_runs_construct():
    net = Net()
    out = net(Tensor(np.array([[1.0, 2.0]], np.float32)))
    assert isinstance(out, Tensor) and out.shape == (1, 1) and out.item() == 9.0

    class KW(Cell):
        def construct(self, x, scale=1.0):
            return x * scale

    assert KW()(Tensor(2.0), scale=3.0).item() == 6.0


def test_construct_not_implemented():
    class Bare(Cell):
        pass

    with pytest.raises(NotImplementedError, match='construct'):
        Bare()(1)


def test_missing_super_init_error():
    class Bad(Cell):
        def __init__(self):
            self.w = Parameter(1.0)

    with pytest.raises(RuntimeError, match=r'super\(\)\.__init__\(\)'):
        Bad()

    class Lazy(Cell):
        def __init__(self):
            pass

    lazy = Lazy()
    with pytest.raises(RuntimeError, match=r'super\(\)\.__init__\(\)'):
        lazy.x = 1
    with pytest.raises(RuntimeError, match=r'super\(\)\.__init__\(\)'):
        list(lazy.parameters_and_names())
    with pytest.raises(AttributeError, match=r'super\(\)\.__init__\(\)'):
        lazy._params
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        Net().nope


def test_set_train_recursive_and_set_grad():
    net = Net()
    assert net.set_train() is net
    assert net.training and net.fc1.training and net.fc2.training
    net.set_train(False)
    assert not net.training and not net.fc1.training
    net.fc1.set_train(True)
    assert net.fc1.training and not net.training
    assert net.set_grad() is net and net.requires_grad is True
    net.set_grad(False)
    assert net.requires_grad is False


def test_repr():
    assert repr(Leaf()) == 'Leaf<>'
    assert repr(Dense(2, 3)) == 'Dense<in=2, out=3>'
    assert repr(Net()) == ('Net<\n'
                           '  (fc1): Dense<in=2, out=3>\n'
                           '  (fc2): Dense<in=3, out=1>\n'
                           '  >')
    assert Leaf().extend_repr() == ''
    assert Net().cls_name == 'Net'


def test_flags():
    c = Leaf()
    assert c.add_flags(defer_inline=True) is c and c._flags == {'defer_inline': True}

    class Flagged(Cell):
        def __init__(self):
            super().__init__(flags={'a': 1})

    assert Flagged()._flags == {'a': 1}
