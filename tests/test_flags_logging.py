"""tf.flags / tf.app.run (absl's parsing rules) and tf.logging (on Python's logging)."""
import logging

import pytest

import collflow as cf
from collflow.platform import flags as flags_mod
from collflow.platform import tf_logging


@pytest.fixture
def fv():
    """A FlagValues with one flag of each kind."""
    f = cf.flags.FlagValues()
    cf.flags.DEFINE_integer("steps", 10, "training steps", lower_bound=1, flag_values=f)
    cf.flags.DEFINE_float("lr", 0.1, "learning rate", flag_values=f)
    cf.flags.DEFINE_string("name", "run", "run name", flag_values=f)
    cf.flags.DEFINE_boolean("fp16", False, "compress", flag_values=f)
    cf.flags.DEFINE_bool("shuffle", True, "shuffle data", flag_values=f)
    cf.flags.DEFINE_list("layers", "64,32", "layer sizes", flag_values=f)
    cf.flags.DEFINE_enum("opt", "sgd", ["sgd", "adam"], "optimizer", flag_values=f)
    return f


@pytest.fixture
def global_flags(monkeypatch):
    """A fresh global FLAGS for tests of cf.app.run (which parses into cf.flags.FLAGS)."""
    f = cf.flags.FlagValues(auto_parse_argv=True)
    monkeypatch.setattr(flags_mod, "FLAGS", f)
    return f


def test_defaults_before_any_flag(fv):
    assert fv(["prog"]) == ["prog"]
    assert (fv.steps, fv.lr, fv.name, fv.fp16, fv.shuffle, fv.layers, fv.opt) == (
        10, 0.1, "run", False, True, ["64", "32"], "sgd")
    assert fv["steps"].default == 10 and fv["steps"].present == 0


def test_every_spelling_absl_accepts(fv):
    rest = fv(["prog", "--steps=5", "--lr", "0.5", "-name=x", "--fp16", "--noshuffle", "--layers=8,4,2",
               "--opt", "adam"])
    assert rest == ["prog"]
    assert (fv.steps, fv.lr, fv.name, fv.fp16, fv.shuffle, fv.layers, fv.opt) == (
        5, 0.5, "x", True, False, ["8", "4", "2"], "adam")
    assert fv["steps"].present == 1 and not fv["steps"].using_default_value
    fv(["prog", "--fp16=false", "--shuffle=1", "--steps", "0x10"])
    assert (fv.fp16, fv.shuffle, fv.steps) == (False, True, 16)


def test_positionals_interleave_and_double_dash_ends_parsing(fv):
    assert fv(["prog", "a", "--steps=3", "b", "--", "--lr=9", "c"]) == ["prog", "a", "b", "--lr=9", "c"]
    assert fv.steps == 3 and fv.lr == 0.1


def test_unknown_flags_fail_or_stay_for_main(fv):
    with pytest.raises(cf.flags.UnrecognizedFlagError, match="Unknown command line flag 'stepz'.*steps"):
        fv(["prog", "--stepz=3"])
    assert fv(["prog", "--stepz=3", "--steps=2", "--nofoo", "--", "x"], known_only=True) == [
        "prog", "--stepz=3", "--nofoo", "--", "x"]
    assert fv.steps == 2


@pytest.mark.parametrize("argv, message", [
    (["--steps=abc"], "flag --steps=abc: invalid literal"),
    (["--steps=0"], "0 is below the lower bound 1"),
    (["--fp16=yes"], "Non-boolean argument to boolean flag"),
    (["--opt=rmsprop"], "value should be one of <sgd|adam>"),
    (["--nofp16=1"], "--nofp16=1 does not take an argument"),
    (["--steps"], "Missing value for flag --steps"),
])
def test_bad_values_name_the_flag(fv, argv, message):
    with pytest.raises(cf.flags.IllegalFlagValueError, match=message):
        fv(["prog"] + argv)


def test_definition_errors_and_access_rules(fv):
    with pytest.raises(cf.flags.DuplicateFlagError, match="'steps' is defined twice"):
        cf.flags.DEFINE_integer("steps", 1, "again", flag_values=fv)
    with pytest.raises(cf.flags.IllegalFlagValueError, match="default 'x' of --bad"):
        cf.flags.DEFINE_integer("bad", "x", "h", flag_values=fv)
    with pytest.raises(cf.flags.UnparsedFlagAccessError, match="before flags were parsed"):
        fv.steps
    fv(["prog"])
    fv.steps = 7  # assignment after parsing, as absl
    assert fv.flag_values_dict()["steps"] == 7
    with pytest.raises(cf.flags.UnrecognizedFlagError):
        fv.nonexistent = 1
    fv.unparse_flags()
    assert not fv.is_parsed() and fv["steps"].value == 10


def test_required_flags(fv):
    cf.flags.DEFINE_string("data_dir", None, "where", flag_values=fv)
    cf.flags.mark_flag_as_required("data_dir", flag_values=fv)
    with pytest.raises(cf.flags.IllegalFlagValueError, match="--data_dir must have a value other than None"):
        fv(["prog"])
    fv(["prog", "--data_dir=/d"])
    assert fv.data_dir == "/d"


def test_global_flags_parse_sys_argv_on_first_read(global_flags, monkeypatch):
    cf.flags.DEFINE_integer("epochs", 1, "epochs")
    monkeypatch.setattr("sys.argv", ["prog", "--epochs=4"])
    assert cf.flags.FLAGS.epochs == 4 and cf.app.flags.FLAGS is cf.flags.FLAGS


def test_app_run_parses_then_exits_with_mains_value(global_flags):
    cf.flags.DEFINE_integer("epochs", 1, "epochs")
    seen = []

    def main(argv):
        seen.append((list(argv), cf.flags.FLAGS.epochs))
        return 3
    with pytest.raises(SystemExit) as e:
        cf.app.run(main, argv=["prog", "--epochs=2", "pos", "--other=1"])
    assert e.value.code == 3
    assert seen == [(["prog", "pos", "--other=1"], 2)]


def test_app_run_help_and_bad_values(global_flags, capsys):
    cf.flags.DEFINE_integer("epochs", 1, "how many passes")
    with pytest.raises(SystemExit) as e:
        cf.app.run(lambda argv: 0, argv=["prog", "--help"])
    assert e.value.code == 0 and "--epochs: how many passes" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:
        cf.app.run(lambda argv: 0, argv=["prog", "--epochs=many"])
    assert e.value.code == 1 and "FATAL Flags parsing error: flag --epochs=many" in capsys.readouterr().err


# -- logging -------------------------------------------------------------------------------------------------

@pytest.fixture
def verbosity():
    old = cf.logging.get_verbosity()
    yield
    cf.logging.set_verbosity(old)


def test_levels_are_pythons_and_default_is_warn():
    assert (cf.logging.DEBUG, cf.logging.INFO, cf.logging.WARN, cf.logging.ERROR, cf.logging.FATAL) == (
        logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR, logging.CRITICAL)
    assert cf.logging.get_logger() is logging.getLogger("collflow")
    if logging.getLogger("collflow").level == logging.WARN:  # nobody changed it in this process
        assert cf.logging.get_verbosity() == cf.logging.WARN


def test_verbosity_filters_messages_and_reaches_collflows_loggers(caplog, verbosity):
    cf.logging.set_verbosity(cf.logging.WARN)
    with caplog.at_level(logging.NOTSET):
        cf.logging.info("hidden %d", 1)
        cf.logging.warning("shown %d", 2)
        logging.getLogger("collflow.checkpoint").info("child hidden")
        cf.logging.set_verbosity(cf.logging.INFO)
        cf.logging.info("now %s", "visible")
        logging.getLogger("collflow.checkpoint").info("child visible")
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.WARN, "shown 2"), (logging.INFO, "now visible"), (logging.INFO, "child visible")]
    assert caplog.records[0].filename == "test_flags_logging.py"  # the caller, not tf_logging.py
    with pytest.raises(TypeError, match="set_verbosity takes a level"):
        cf.logging.set_verbosity("INFO")


def test_log_every_n_first_n_and_if(caplog, verbosity):
    cf.logging.set_verbosity(cf.logging.INFO)
    with caplog.at_level(logging.INFO):
        for i in range(7):
            cf.logging.log_every_n(cf.logging.INFO, "every %d", 3, i)
        for i in range(5):
            cf.logging.log_first_n(cf.logging.INFO, "first %d", 2, i)
        cf.logging.log_if(cf.logging.INFO, "if %s", False, "no")
        cf.logging.log_if(cf.logging.INFO, "if %s", True, "yes")
    assert [r.getMessage() for r in caplog.records] == ["every 0", "every 3", "every 6", "first 0", "first 1",
                                                        "if yes"]


def test_log_lines_carry_the_rank_under_a_launcher(monkeypatch):
    rec = logging.LogRecord("collflow", logging.INFO, __file__, 1, "hello", (), None)
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "3")
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "4")
    assert tf_logging._formatter().format(rec) == "INFO:collflow:[rank 3] hello"
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "1")
    assert tf_logging._formatter().format(rec) == "INFO:collflow:hello"
