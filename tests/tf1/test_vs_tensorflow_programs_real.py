"""Whole TF1 programs as their authors wrote them, against real TensorFlow (see
test_vs_tensorflow_programs.py for the method: equal initial weights set by name, then the
per-step losses, a few fetches and every global variable, slots included, compared):
google-research/bert (modeling.py, optimization.py's AdamWeightDecayOptimizer subclass of
tf.train.Optimizer and its warmup schedule, run_pretraining.py's masked-LM and next-sentence
heads, then run_classifier.py fine-tuning from the pre-training checkpoint through
init_from_checkpoint), a WGAN-GP (a conv critic's gradient penalty differentiated again), MAML
(tf.gradients inside tf.map_fn, the meta-gradient through the inner steps) and the PTB word-LM
tutorial (range_input_producer and strided_slice under queue runners, an unrolled
MultiRNNCell with its state fed back, a learning-rate variable assigned through a
placeholder, a reused evaluation model; plain and under a Supervisor).  More programs:
test_vs_tensorflow_programs_real_{vision,sequences,training}.py.

Where TF 2.21 can no longer run the original line (no tf.contrib, tf.estimator or
Variable.initialized_value; conv2d_transpose's batch) the program says so where it deviates.
tf.contrib.layers calls run tf_slim's layers on TensorFlow's side, collflow's own contrib on
collflow's.  Skipped cleanly without TensorFlow (BERT and DCGAN also without tf_slim).
"""
import collections
import math
import os
import re
import shutil
import sys
import tempfile
import zlib

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

from test_vs_tensorflow_programs import _set_vars, _values, compare_program  # noqa: E402
from test_vs_tensorflow_feature_columns_layers_fuzz import tf_slim  # noqa: E402,F401  (the patched tf_slim)

tft = tensorflow.compat.v1
tft.disable_eager_execution()
pytestmark = [pytest.mark.filterwarnings("ignore:.*deprecated:UserWarning"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning"),
              pytest.mark.filterwarnings("ignore::UserWarning")]

_SLIM = {}  # the tf_slim module, set by the test


def _contrib_layers(tf):
    """tf.contrib.layers: collflow's own, tf_slim's layers for TensorFlow 2."""
    return tf.contrib.layers if hasattr(tf, "contrib") else _SLIM["slim"].layers


# ------------------------------------------------------------------------------------------
# BERT (google-research/bert modeling.py, optimization.py, run_pretraining.py, run_classifier.py)

def _bert_modeling(tf):
    """modeling.py's functions, as written there (dropout off: hidden_dropout_prob 0.0)."""

    def gelu(x):
        cdf = 0.5 * (1.0 + tf.erf(x / tf.sqrt(2.0)))
        return x * cdf

    def dropout(input_tensor, dropout_prob):
        if dropout_prob is None or dropout_prob == 0.0:
            return input_tensor
        return tf.nn.dropout(input_tensor, 1.0 - dropout_prob)

    def layer_norm(input_tensor, name=None):
        return _contrib_layers(tf).layer_norm(inputs=input_tensor, begin_norm_axis=-1, begin_params_axis=-1,
                                              scope=name)

    def create_initializer(initializer_range=0.02):
        return tf.truncated_normal_initializer(stddev=initializer_range)

    def get_shape_list(tensor, expected_rank=None, name=None):
        shape = tensor.shape.as_list()
        non_static_indexes = [index for index, dim in enumerate(shape) if dim is None]
        if not non_static_indexes:
            return shape
        dyn_shape = tf.shape(tensor)
        for index in non_static_indexes:
            shape[index] = dyn_shape[index]
        return shape

    def reshape_to_matrix(input_tensor):
        ndims = input_tensor.shape.ndims
        if ndims == 2:
            return input_tensor
        width = input_tensor.shape[-1]
        return tf.reshape(input_tensor, [-1, width])

    def reshape_from_matrix(output_tensor, orig_shape_list):
        if len(orig_shape_list) == 2:
            return output_tensor
        output_shape = get_shape_list(output_tensor)
        orig_dims = orig_shape_list[0:-1]
        width = output_shape[-1]
        return tf.reshape(output_tensor, orig_dims + [width])

    def embedding_lookup(input_ids, vocab_size, embedding_size=128, initializer_range=0.02,
                         word_embedding_name="word_embeddings", use_one_hot_embeddings=False):
        if input_ids.shape.ndims == 2:
            input_ids = tf.expand_dims(input_ids, axis=[-1])
        embedding_table = tf.get_variable(name=word_embedding_name, shape=[vocab_size, embedding_size],
                                          initializer=create_initializer(initializer_range))
        flat_input_ids = tf.reshape(input_ids, [-1])
        if use_one_hot_embeddings:
            one_hot_input_ids = tf.one_hot(flat_input_ids, depth=vocab_size)
            output = tf.matmul(one_hot_input_ids, embedding_table)
        else:
            output = tf.gather(embedding_table, flat_input_ids)
        input_shape = get_shape_list(input_ids)
        output = tf.reshape(output, input_shape[0:-1] + [input_shape[-1] * embedding_size])
        return (output, embedding_table)

    def embedding_postprocessor(input_tensor, use_token_type=False, token_type_ids=None, token_type_vocab_size=16,
                                token_type_embedding_name="token_type_embeddings", use_position_embeddings=True,
                                position_embedding_name="position_embeddings", initializer_range=0.02,
                                max_position_embeddings=512, dropout_prob=0.1):
        input_shape = get_shape_list(input_tensor, expected_rank=3)
        batch_size, seq_length, width = input_shape
        output = input_tensor
        if use_token_type:
            token_type_table = tf.get_variable(name=token_type_embedding_name, shape=[token_type_vocab_size, width],
                                               initializer=create_initializer(initializer_range))
            flat_token_type_ids = tf.reshape(token_type_ids, [-1])
            one_hot_ids = tf.one_hot(flat_token_type_ids, depth=token_type_vocab_size)
            token_type_embeddings = tf.matmul(one_hot_ids, token_type_table)
            token_type_embeddings = tf.reshape(token_type_embeddings, [batch_size, seq_length, width])
            output += token_type_embeddings
        if use_position_embeddings:
            assert_op = tf.assert_less_equal(seq_length, max_position_embeddings)
            with tf.control_dependencies([assert_op]):
                full_position_embeddings = tf.get_variable(name=position_embedding_name,
                                                           shape=[max_position_embeddings, width],
                                                           initializer=create_initializer(initializer_range))
                position_embeddings = tf.slice(full_position_embeddings, [0, 0], [seq_length, -1])
                num_dims = len(output.shape.as_list())
                position_broadcast_shape = []
                for _ in range(num_dims - 2):
                    position_broadcast_shape.append(1)
                position_broadcast_shape.extend([seq_length, width])
                position_embeddings = tf.reshape(position_embeddings, position_broadcast_shape)
                output += position_embeddings
        output = dropout(layer_norm(output, "LayerNorm"), dropout_prob)
        return output

    def create_attention_mask_from_input_mask(from_tensor, to_mask):
        from_shape = get_shape_list(from_tensor, expected_rank=[2, 3])
        batch_size, from_seq_length = from_shape[0], from_shape[1]
        to_seq_length = get_shape_list(to_mask, expected_rank=2)[1]
        to_mask = tf.cast(tf.reshape(to_mask, [batch_size, 1, to_seq_length]), tf.float32)
        broadcast_ones = tf.ones(shape=[batch_size, from_seq_length, 1], dtype=tf.float32)
        return broadcast_ones * to_mask

    def attention_layer(from_tensor, to_tensor, attention_mask=None, num_attention_heads=1, size_per_head=512,
                        initializer_range=0.02, batch_size=None, from_seq_length=None, to_seq_length=None):
        def transpose_for_scores(input_tensor, batch_size, num_attention_heads, seq_length, width):
            output_tensor = tf.reshape(input_tensor, [batch_size, seq_length, num_attention_heads, width])
            return tf.transpose(output_tensor, [0, 2, 1, 3])

        from_tensor_2d = reshape_to_matrix(from_tensor)
        to_tensor_2d = reshape_to_matrix(to_tensor)
        query_layer = tf.layers.dense(from_tensor_2d, num_attention_heads * size_per_head, name="query",
                                      kernel_initializer=create_initializer(initializer_range))
        key_layer = tf.layers.dense(to_tensor_2d, num_attention_heads * size_per_head, name="key",
                                    kernel_initializer=create_initializer(initializer_range))
        value_layer = tf.layers.dense(to_tensor_2d, num_attention_heads * size_per_head, name="value",
                                      kernel_initializer=create_initializer(initializer_range))
        query_layer = transpose_for_scores(query_layer, batch_size, num_attention_heads, from_seq_length,
                                           size_per_head)
        key_layer = transpose_for_scores(key_layer, batch_size, num_attention_heads, to_seq_length, size_per_head)
        attention_scores = tf.matmul(query_layer, key_layer, transpose_b=True)
        attention_scores = tf.multiply(attention_scores, 1.0 / math.sqrt(float(size_per_head)))
        if attention_mask is not None:
            attention_mask = tf.expand_dims(attention_mask, axis=[1])
            adder = (1.0 - tf.cast(attention_mask, tf.float32)) * -10000.0
            attention_scores += adder
        attention_probs = tf.nn.softmax(attention_scores)
        value_layer = tf.reshape(value_layer, [batch_size, to_seq_length, num_attention_heads, size_per_head])
        value_layer = tf.transpose(value_layer, [0, 2, 1, 3])
        context_layer = tf.matmul(attention_probs, value_layer)
        context_layer = tf.transpose(context_layer, [0, 2, 1, 3])
        return tf.reshape(context_layer, [batch_size * from_seq_length, num_attention_heads * size_per_head])

    def transformer_model(input_tensor, attention_mask=None, hidden_size=768, num_hidden_layers=12,
                          num_attention_heads=12, intermediate_size=3072, intermediate_act_fn=gelu,
                          initializer_range=0.02, do_return_all_layers=False):
        attention_head_size = int(hidden_size / num_attention_heads)
        input_shape = get_shape_list(input_tensor, expected_rank=3)
        batch_size, seq_length, input_width = input_shape
        if input_width != hidden_size:
            raise ValueError("The width of the input tensor (%d) != hidden size (%d)" % (input_width, hidden_size))
        prev_output = reshape_to_matrix(input_tensor)
        all_layer_outputs = []
        for layer_idx in range(num_hidden_layers):
            with tf.variable_scope("layer_%d" % layer_idx):
                layer_input = prev_output
                with tf.variable_scope("attention"):
                    attention_heads = []
                    with tf.variable_scope("self"):
                        attention_head = attention_layer(
                            from_tensor=layer_input, to_tensor=layer_input, attention_mask=attention_mask,
                            num_attention_heads=num_attention_heads, size_per_head=attention_head_size,
                            initializer_range=initializer_range, batch_size=batch_size,
                            from_seq_length=seq_length, to_seq_length=seq_length)
                        attention_heads.append(attention_head)
                    if len(attention_heads) == 1:
                        attention_output = attention_heads[0]
                    else:
                        attention_output = tf.concat(attention_heads, axis=-1)
                    with tf.variable_scope("output"):
                        attention_output = tf.layers.dense(attention_output, hidden_size,
                                                           kernel_initializer=create_initializer(initializer_range))
                        attention_output = layer_norm(attention_output + layer_input)
                with tf.variable_scope("intermediate"):
                    intermediate_output = tf.layers.dense(attention_output, intermediate_size,
                                                          activation=intermediate_act_fn,
                                                          kernel_initializer=create_initializer(initializer_range))
                with tf.variable_scope("output"):
                    layer_output = tf.layers.dense(intermediate_output, hidden_size,
                                                   kernel_initializer=create_initializer(initializer_range))
                    layer_output = layer_norm(layer_output + attention_output)
                    prev_output = layer_output
                    all_layer_outputs.append(layer_output)
        return reshape_from_matrix(prev_output, input_shape)

    def bert_model(config, input_ids, input_mask, token_type_ids, use_one_hot_embeddings, scope=None):
        input_shape = get_shape_list(input_ids, expected_rank=2)
        with tf.variable_scope(scope, default_name="bert"):
            with tf.variable_scope("embeddings"):
                embedding_output, embedding_table = embedding_lookup(
                    input_ids=input_ids, vocab_size=config["vocab_size"], embedding_size=config["hidden_size"],
                    word_embedding_name="word_embeddings", use_one_hot_embeddings=use_one_hot_embeddings)
                embedding_output = embedding_postprocessor(
                    input_tensor=embedding_output, use_token_type=True, token_type_ids=token_type_ids,
                    token_type_vocab_size=config["type_vocab_size"], token_type_embedding_name="token_type_embeddings",
                    use_position_embeddings=True, position_embedding_name="position_embeddings",
                    max_position_embeddings=config["max_position_embeddings"], dropout_prob=0.0)
            with tf.variable_scope("encoder"):
                attention_mask = create_attention_mask_from_input_mask(input_ids, input_mask)
                sequence_output = transformer_model(
                    input_tensor=embedding_output, attention_mask=attention_mask, hidden_size=config["hidden_size"],
                    num_hidden_layers=config["num_hidden_layers"], num_attention_heads=config["num_attention_heads"],
                    intermediate_size=config["intermediate_size"], intermediate_act_fn=gelu)
            with tf.variable_scope("pooler"):
                first_token_tensor = tf.squeeze(sequence_output[:, 0:1, :], axis=1)
                pooled_output = tf.layers.dense(first_token_tensor, config["hidden_size"], activation=tf.tanh,
                                                kernel_initializer=create_initializer())
        assert len(input_shape) == 2
        return sequence_output, pooled_output, embedding_table

    def get_assignment_map_from_checkpoint(tvars, init_checkpoint):
        assignment_map = {}
        initialized_variable_names = {}
        name_to_variable = collections.OrderedDict()
        for var in tvars:
            name = var.name
            m = re.match("^(.*):\\d+$", name)
            if m is not None:
                name = m.group(1)
            name_to_variable[name] = var
        init_vars = tf.train.list_variables(init_checkpoint)
        assignment_map = collections.OrderedDict()
        for x in init_vars:
            (name, var) = (x[0], x[1])
            if name not in name_to_variable:
                continue
            assignment_map[name] = name
            initialized_variable_names[name] = 1
            initialized_variable_names[name + ":0"] = 1
        return (assignment_map, initialized_variable_names)

    return dict(gelu=gelu, layer_norm=layer_norm, get_shape_list=get_shape_list, bert_model=bert_model,
                create_initializer=create_initializer,
                get_assignment_map_from_checkpoint=get_assignment_map_from_checkpoint)


def _bert_optimization(tf):
    """optimization.py: create_optimizer and AdamWeightDecayOptimizer, as written there."""

    class AdamWeightDecayOptimizer(tf.train.Optimizer):
        """A basic Adam optimizer that includes "correct" L2 weight decay."""

        def __init__(self, learning_rate, weight_decay_rate=0.0, beta_1=0.9, beta_2=0.999, epsilon=1e-6,
                     exclude_from_weight_decay=None, name="AdamWeightDecayOptimizer"):
            super(AdamWeightDecayOptimizer, self).__init__(False, name)
            self.learning_rate = learning_rate
            self.weight_decay_rate = weight_decay_rate
            self.beta_1 = beta_1
            self.beta_2 = beta_2
            self.epsilon = epsilon
            self.exclude_from_weight_decay = exclude_from_weight_decay

        def apply_gradients(self, grads_and_vars, global_step=None, name=None):
            assignments = []
            for (grad, param) in grads_and_vars:
                if grad is None or param is None:
                    continue
                param_name = self._get_variable_name(param.name)
                m = tf.get_variable(name=param_name + "/adam_m", shape=param.shape.as_list(), dtype=tf.float32,
                                    trainable=False, initializer=tf.zeros_initializer())
                v = tf.get_variable(name=param_name + "/adam_v", shape=param.shape.as_list(), dtype=tf.float32,
                                    trainable=False, initializer=tf.zeros_initializer())
                next_m = (tf.multiply(self.beta_1, m) + tf.multiply(1.0 - self.beta_1, grad))
                next_v = (tf.multiply(self.beta_2, v) + tf.multiply(1.0 - self.beta_2, tf.square(grad)))
                update = next_m / (tf.sqrt(next_v) + self.epsilon)
                if self._do_use_weight_decay(param_name):
                    update += self.weight_decay_rate * param
                update_with_lr = self.learning_rate * update
                next_param = param - update_with_lr
                assignments.extend([param.assign(next_param), m.assign(next_m), v.assign(next_v)])
            return tf.group(*assignments, name=name)

        def _do_use_weight_decay(self, param_name):
            if not self.weight_decay_rate:
                return False
            if self.exclude_from_weight_decay:
                for r in self.exclude_from_weight_decay:
                    if re.search(r, param_name) is not None:
                        return False
            return True

        def _get_variable_name(self, param_name):
            m = re.match("^(.*):\\d+$", param_name)
            if m is not None:
                param_name = m.group(1)
            return param_name

    def create_optimizer(loss, init_lr, num_train_steps, num_warmup_steps):
        global_step = tf.train.get_or_create_global_step()
        learning_rate = tf.constant(value=init_lr, shape=[], dtype=tf.float32)
        learning_rate = tf.train.polynomial_decay(learning_rate, global_step, num_train_steps,
                                                  end_learning_rate=0.0, power=1.0, cycle=False)
        if num_warmup_steps:
            global_steps_int = tf.cast(global_step, tf.int32)
            warmup_steps_int = tf.constant(num_warmup_steps, dtype=tf.int32)
            global_steps_float = tf.cast(global_steps_int, tf.float32)
            warmup_steps_float = tf.cast(warmup_steps_int, tf.float32)
            warmup_percent_done = global_steps_float / warmup_steps_float
            warmup_learning_rate = init_lr * warmup_percent_done
            is_warmup = tf.cast(global_steps_int < warmup_steps_int, tf.float32)
            learning_rate = ((1.0 - is_warmup) * learning_rate + is_warmup * warmup_learning_rate)
        optimizer = AdamWeightDecayOptimizer(learning_rate=learning_rate, weight_decay_rate=0.01, beta_1=0.9,
                                             beta_2=0.999, epsilon=1e-6,
                                             exclude_from_weight_decay=["LayerNorm", "layer_norm", "bias"])
        tvars = tf.trainable_variables()
        grads = tf.gradients(loss, tvars)
        (grads, _) = tf.clip_by_global_norm(grads, clip_norm=1.0)
        train_op = optimizer.apply_gradients(zip(grads, tvars), global_step=global_step)
        new_global_step = global_step + 1
        train_op = tf.group(train_op, [global_step.assign(new_global_step)])
        return train_op, learning_rate

    return create_optimizer


def _bert_data(rng, n, V, T, P):
    ids = rng.randint(4, V, (n, T)).astype(np.int32)
    lens = rng.randint(T // 2, T + 1, n)
    mask = (np.arange(T)[None] < lens[:, None]).astype(np.int32)
    ids[mask == 0] = 0
    segs = ((np.arange(T)[None] >= (lens[:, None] // 2)) & (mask == 1)).astype(np.int32)
    positions = np.stack([np.sort(rng.choice(np.arange(1, ln), P, replace=False)) for ln in lens]).astype(np.int32)
    labels = np.take_along_axis(ids, positions, 1).astype(np.int32)
    weights = (rng.rand(n, P) < 0.8).astype(np.float32)
    masked = ids.copy()
    np.put_along_axis(masked, positions, 3, 1)  # [MASK]
    nsp = rng.randint(0, 2, n).astype(np.int32)
    return dict(ids=masked, mask=mask, segs=segs, positions=positions, labels=labels, weights=weights, nsp=nsp)


def bert(tf, seed, steps, one_hot, finetune=True):
    rng = np.random.RandomState(seed)
    config = dict(vocab_size=30, hidden_size=16, num_hidden_layers=2, num_attention_heads=4, intermediate_size=24,
                  type_vocab_size=2, max_position_embeddings=12)
    B, T, P = 4, 8, 2
    data = _bert_data(rng, B * 3, config["vocab_size"], T, P)
    modeling = _bert_modeling(tf)
    create_optimizer = _bert_optimization(tf)
    ckpt_dir = tempfile.mkdtemp()
    out = {"losses": [], "mlm_losses": [], "lrs": []}
    try:
        with tf.Graph().as_default():
            input_ids = tf.placeholder(tf.int32, [B, T], name="input_ids")
            input_mask = tf.placeholder(tf.int32, [B, T], name="input_mask")
            segment_ids = tf.placeholder(tf.int32, [B, T], name="segment_ids")
            masked_lm_positions = tf.placeholder(tf.int32, [B, P], name="masked_lm_positions")
            masked_lm_ids = tf.placeholder(tf.int32, [B, P], name="masked_lm_ids")
            masked_lm_weights = tf.placeholder(tf.float32, [B, P], name="masked_lm_weights")
            next_sentence_labels = tf.placeholder(tf.int32, [B], name="next_sentence_labels")
            sequence_output, pooled_output, embedding_table = modeling["bert_model"](
                config, input_ids, input_mask, segment_ids, one_hot)

            def gather_indexes(sequence_tensor, positions):
                sequence_shape = modeling["get_shape_list"](sequence_tensor, expected_rank=3)
                batch_size, seq_length, width = sequence_shape
                flat_offsets = tf.reshape(tf.range(0, batch_size, dtype=tf.int32) * seq_length, [-1, 1])
                flat_positions = tf.reshape(positions + flat_offsets, [-1])
                flat_sequence_tensor = tf.reshape(sequence_tensor, [batch_size * seq_length, width])
                return tf.gather(flat_sequence_tensor, flat_positions)

            input_tensor = gather_indexes(sequence_output, masked_lm_positions)
            with tf.variable_scope("cls/predictions"):
                with tf.variable_scope("transform"):
                    input_tensor = tf.layers.dense(input_tensor, units=config["hidden_size"],
                                                   activation=modeling["gelu"],
                                                   kernel_initializer=modeling["create_initializer"]())
                    input_tensor = modeling["layer_norm"](input_tensor)
                output_bias = tf.get_variable("output_bias", shape=[config["vocab_size"]],
                                              initializer=tf.zeros_initializer())
                logits = tf.matmul(input_tensor, embedding_table, transpose_b=True)
                logits = tf.nn.bias_add(logits, output_bias)
                log_probs = tf.nn.log_softmax(logits, axis=-1)
                label_ids = tf.reshape(masked_lm_ids, [-1])
                label_weights = tf.reshape(masked_lm_weights, [-1])
                one_hot_labels = tf.one_hot(label_ids, depth=config["vocab_size"], dtype=tf.float32)
                per_example_loss = -tf.reduce_sum(log_probs * one_hot_labels, axis=[-1])
                numerator = tf.reduce_sum(label_weights * per_example_loss)
                denominator = tf.reduce_sum(label_weights) + 1e-5
                masked_lm_loss = numerator / denominator
            with tf.variable_scope("cls/seq_relationship"):
                output_weights = tf.get_variable("output_weights", shape=[2, config["hidden_size"]],
                                                 initializer=modeling["create_initializer"]())
                output_bias = tf.get_variable("output_bias", shape=[2], initializer=tf.zeros_initializer())
                logits = tf.matmul(pooled_output, output_weights, transpose_b=True)
                logits = tf.nn.bias_add(logits, output_bias)
                log_probs = tf.nn.log_softmax(logits, axis=-1)
                labels = tf.reshape(next_sentence_labels, [-1])
                one_hot_labels = tf.one_hot(labels, depth=2, dtype=tf.float32)
                next_sentence_loss = tf.reduce_mean(-tf.reduce_sum(one_hot_labels * log_probs, axis=-1))
            total_loss = masked_lm_loss + next_sentence_loss
            train_op, learning_rate = create_optimizer(total_loss, 5e-3, steps + 2, 3)
            saver = tf.train.Saver()
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                _set_vars(tf, sess, seed, 0.3)
                for step in range(steps):
                    i = (step % 3) * B
                    fd = {input_ids: data["ids"][i:i + B], input_mask: data["mask"][i:i + B],
                          segment_ids: data["segs"][i:i + B], masked_lm_positions: data["positions"][i:i + B],
                          masked_lm_ids: data["labels"][i:i + B], masked_lm_weights: data["weights"][i:i + B],
                          next_sentence_labels: data["nsp"][i:i + B]}
                    lv, ml, lr, _ = sess.run([total_loss, masked_lm_loss, learning_rate, train_op], fd)
                    out["losses"].append(lv), out["mlm_losses"].append(ml), out["lrs"].append(lr)
                out["pretrain_vars"] = _values(tf, sess)
                ckpt = saver.save(sess, os.path.join(ckpt_dir, "model.ckpt"), global_step=steps)
        out["ckpt_names"] = sorted(n for n, _ in tf.train.list_variables(ckpt))
        if not finetune:
            return out
        # run_classifier.py: a fresh graph whose bert/ variables come from the checkpoint
        with tf.Graph().as_default():
            input_ids = tf.placeholder(tf.int32, [None, T])
            input_mask = tf.placeholder(tf.int32, [None, T])
            segment_ids = tf.placeholder(tf.int32, [None, T])
            label_ids = tf.placeholder(tf.int32, [None])
            _, output_layer, _ = modeling["bert_model"](config, input_ids, input_mask, segment_ids, one_hot)
            hidden_size = output_layer.shape[-1].value if hasattr(output_layer.shape[-1], "value") \
                else output_layer.shape[-1]
            output_weights = tf.get_variable("output_weights", [3, hidden_size],
                                             initializer=tf.truncated_normal_initializer(stddev=0.02))
            output_bias = tf.get_variable("output_bias", [3], initializer=tf.zeros_initializer())
            with tf.variable_scope("loss"):
                logits = tf.matmul(output_layer, output_weights, transpose_b=True)
                logits = tf.nn.bias_add(logits, output_bias)
                probabilities = tf.nn.softmax(logits, axis=-1)
                log_probs = tf.nn.log_softmax(logits, axis=-1)
                one_hot_labels = tf.one_hot(label_ids, depth=3, dtype=tf.float32)
                per_example_loss = -tf.reduce_sum(one_hot_labels * log_probs, axis=-1)
                loss = tf.reduce_mean(per_example_loss)
            tvars = tf.trainable_variables()
            (assignment_map, initialized_variable_names) = modeling["get_assignment_map_from_checkpoint"](tvars, ckpt)
            tf.train.init_from_checkpoint(ckpt, assignment_map)
            out["init_strings"] = [("%s%s" % (var.name, ", *INIT_FROM_CKPT*" if var.name in initialized_variable_names
                                              else "")) for var in tvars]
            train_op, _ = create_optimizer(loss, 2e-3, steps, 0)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                _set_vars(tf, sess, seed + 1, 0.3, [v for v in tvars if v.name not in initialized_variable_names])
                ys = data["nsp"] + data["segs"][:, -1]
                out["cls_losses"] = [sess.run([loss, train_op], {
                    input_ids: data["ids"][(s % 3) * B:(s % 3 + 1) * B], input_mask: data["mask"][(s % 3) * B:(s % 3 + 1) * B],
                    segment_ids: data["segs"][(s % 3) * B:(s % 3 + 1) * B], label_ids: ys[(s % 3) * B:(s % 3 + 1) * B]})[0]
                    for s in range(steps)]
                out["cls_probs"] = sess.run(probabilities, {input_ids: data["ids"], input_mask: data["mask"],
                                                            segment_ids: data["segs"]})
                out["vars"] = _values(tf, sess)
    finally:
        shutil.rmtree(ckpt_dir, ignore_errors=True)
    return out


# ------------------------------------------------------------------------------------------
# WGAN-GP (igul222/improved_wgan_training): the critic's gradient penalty, differentiated again

def wgan_gp(tf, seed, steps):
    rng = np.random.RandomState(seed)
    BATCH_SIZE, S, Z, LAMBDA, CRITIC_ITERS = 8, 6, 4, 10.0, 3
    images = np.tanh(rng.normal(size=(BATCH_SIZE * 4, S, S, 1)) + np.linspace(-1, 1, S)[None, :, None, None])
    images = images.astype(np.float32)

    def Generator(n_samples, noise):
        with tf.variable_scope("Generator", reuse=tf.AUTO_REUSE):
            output = tf.layers.dense(noise, 3 * 3 * 8, activation=tf.nn.relu, name="Linear")
            output = tf.reshape(output, [-1, 3, 3, 8])
            output = tf.layers.conv2d_transpose(output, 4, 3, strides=2, padding="same", activation=tf.nn.relu,
                                                name="Deconv")
            output = tf.layers.conv2d(output, 1, 3, padding="same", name="Conv")
            return tf.tanh(output)

    def Discriminator(inputs):
        with tf.variable_scope("Discriminator", reuse=tf.AUTO_REUSE):
            output = tf.layers.conv2d(inputs, 8, 3, strides=2, padding="same", name="Conv1")
            output = tf.nn.leaky_relu(output, alpha=0.2)
            output = tf.layers.conv2d(output, 8, 3, padding="same", name="Conv2")
            output = tf.nn.softplus(output)
            output = tf.reshape(output, [-1, 3 * 3 * 8])
            return tf.reshape(tf.layers.dense(output, 1, name="Output"), [-1])

    real_data = tf.placeholder(tf.float32, shape=[BATCH_SIZE, S, S, 1])
    noise = tf.placeholder(tf.float32, shape=[BATCH_SIZE, Z])
    alpha = tf.placeholder(tf.float32, shape=[BATCH_SIZE, 1, 1, 1])  # tf.random_uniform in the original
    fake_data = Generator(BATCH_SIZE, noise)
    disc_real = Discriminator(real_data)
    disc_fake = Discriminator(fake_data)
    gen_params = [v for v in tf.trainable_variables() if v.name.startswith("Generator")]
    disc_params = [v for v in tf.trainable_variables() if "Discriminator" in v.name]
    gen_cost = -tf.reduce_mean(disc_fake)
    disc_cost = tf.reduce_mean(disc_fake) - tf.reduce_mean(disc_real)
    differences = fake_data - real_data
    interpolates = real_data + (alpha * differences)
    gradients = tf.gradients(Discriminator(interpolates), [interpolates])[0]
    slopes = tf.sqrt(tf.reduce_sum(tf.square(gradients), reduction_indices=[1, 2, 3]))
    gradient_penalty = tf.reduce_mean((slopes - 1.) ** 2)
    disc_cost += LAMBDA * gradient_penalty
    gen_train_op = tf.train.AdamOptimizer(learning_rate=1e-3, beta1=0.5, beta2=0.9).minimize(gen_cost,
                                                                                            var_list=gen_params)
    disc_opt = tf.train.AdamOptimizer(learning_rate=1e-3, beta1=0.5, beta2=0.9)
    disc_gvs = disc_opt.compute_gradients(disc_cost, var_list=disc_params)
    disc_train_op = disc_opt.apply_gradients(disc_gvs)
    out = {"gen_losses": [], "disc_losses": [], "penalties": []}
    with tf.Session() as session:
        session.run(tf.initialize_all_variables())
        _set_vars(tf, session, seed, 0.4)
        fd0 = {real_data: images[:BATCH_SIZE], noise: rng.normal(size=(BATCH_SIZE, Z)).astype(np.float32),
               alpha: rng.uniform(size=(BATCH_SIZE, 1, 1, 1)).astype(np.float32)}
        out["disc_grads0"] = {v.name: g for (_, v), g in zip(disc_gvs, session.run([g for g, _ in disc_gvs], fd0))}
        for iteration in range(steps):
            if iteration > 0:
                _gen_cost, _ = session.run([gen_cost, gen_train_op], {
                    noise: rng.normal(size=(BATCH_SIZE, Z)).astype(np.float32)})
                out["gen_losses"].append(_gen_cost)
            for i in range(CRITIC_ITERS):
                j = ((iteration * CRITIC_ITERS + i) % 4) * BATCH_SIZE
                _disc_cost, gp, _ = session.run([disc_cost, gradient_penalty, disc_train_op], {
                    real_data: images[j:j + BATCH_SIZE], noise: rng.normal(size=(BATCH_SIZE, Z)).astype(np.float32),
                    alpha: rng.uniform(size=(BATCH_SIZE, 1, 1, 1)).astype(np.float32)})
                out["disc_losses"].append(_disc_cost), out["penalties"].append(gp)
        out["vars"] = _values(tf, session)
    return out


# ------------------------------------------------------------------------------------------
# MAML (cbfinn/maml): sinusoid regression, inner steps by tf.gradients inside tf.map_fn

def maml(tf, seed, steps, num_updates, stop_grad=False):
    rng = np.random.RandomState(seed)
    meta_batch_size, K, dim_hidden, update_lr, meta_lr = 3, 5, [12, 12], 0.05, 1e-2

    def sinusoid_batch():
        amp = rng.uniform(0.1, 5.0, [meta_batch_size])
        phase = rng.uniform(0, np.pi, [meta_batch_size])
        xs = rng.uniform(-5.0, 5.0, [meta_batch_size, 2 * K, 1])
        ys = amp[:, None, None] * np.sin(xs - phase[:, None, None])
        return xs.astype(np.float32), ys.astype(np.float32)

    def construct_fc_weights():
        weights = {}
        weights['w1'] = tf.Variable(tf.truncated_normal([1, dim_hidden[0]], stddev=0.01))
        weights['b1'] = tf.Variable(tf.zeros([dim_hidden[0]]))
        for i in range(1, len(dim_hidden)):
            weights['w' + str(i + 1)] = tf.Variable(tf.truncated_normal([dim_hidden[i - 1], dim_hidden[i]], stddev=0.01))
            weights['b' + str(i + 1)] = tf.Variable(tf.zeros([dim_hidden[i]]))
        weights['w' + str(len(dim_hidden) + 1)] = tf.Variable(tf.truncated_normal([dim_hidden[-1], 1], stddev=0.01))
        weights['b' + str(len(dim_hidden) + 1)] = tf.Variable(tf.zeros([1]))
        return weights

    def forward_fc(inp, weights, reuse=False):
        hidden = tf.nn.relu(tf.matmul(inp, weights['w1']) + weights['b1'])
        for i in range(1, len(dim_hidden)):
            hidden = tf.nn.relu(tf.matmul(hidden, weights['w' + str(i + 1)]) + weights['b' + str(i + 1)])
        return tf.matmul(hidden, weights['w' + str(len(dim_hidden) + 1)]) + weights['b' + str(len(dim_hidden) + 1)]

    def mse(pred, label):
        pred = tf.reshape(pred, [-1])
        label = tf.reshape(label, [-1])
        return tf.reduce_mean(tf.square(pred - label))

    inputa = tf.placeholder(tf.float32)
    inputb = tf.placeholder(tf.float32)
    labela = tf.placeholder(tf.float32)
    labelb = tf.placeholder(tf.float32)
    with tf.variable_scope('model', reuse=None):
        weights = construct_fc_weights()

        def task_metalearn(inp, reuse=True):
            inputa, inputb, labela, labelb = inp
            task_outputbs, task_lossesb = [], []
            task_outputa = forward_fc(inputa, weights, reuse=reuse)
            task_lossa = mse(task_outputa, labela)
            grads = tf.gradients(task_lossa, list(weights.values()))
            if stop_grad:
                grads = [tf.stop_gradient(grad) for grad in grads]
            gradients = dict(zip(weights.keys(), grads))
            fast_weights = dict(zip(weights.keys(), [weights[key] - update_lr * gradients[key]
                                                     for key in weights.keys()]))
            output = forward_fc(inputb, fast_weights, reuse=True)
            task_outputbs.append(output)
            task_lossesb.append(mse(output, labelb))
            for j in range(num_updates - 1):
                loss = mse(forward_fc(inputa, fast_weights, reuse=True), labela)
                grads = tf.gradients(loss, list(fast_weights.values()))
                if stop_grad:
                    grads = [tf.stop_gradient(grad) for grad in grads]
                gradients = dict(zip(fast_weights.keys(), grads))
                fast_weights = dict(zip(fast_weights.keys(), [fast_weights[key] - update_lr * gradients[key]
                                                              for key in fast_weights.keys()]))
                output = forward_fc(inputb, fast_weights, reuse=True)
                task_outputbs.append(output)
                task_lossesb.append(mse(output, labelb))
            return [task_outputa, task_outputbs, task_lossa, task_lossesb]

        out_dtype = [tf.float32, [tf.float32] * num_updates, tf.float32, [tf.float32] * num_updates]
        result = tf.map_fn(task_metalearn, elems=(inputa, inputb, labela, labelb), dtype=out_dtype,
                           parallel_iterations=meta_batch_size)
        outputas, outputbs, lossesa, lossesb = result
    total_loss1 = tf.reduce_sum(lossesa) / tf.to_float(meta_batch_size)
    total_losses2 = [tf.reduce_sum(lossesb[j]) / tf.to_float(meta_batch_size) for j in range(num_updates)]
    pretrain_op = tf.train.AdamOptimizer(meta_lr).minimize(total_loss1)
    optimizer = tf.train.AdamOptimizer(meta_lr)
    gvs = optimizer.compute_gradients(total_losses2[num_updates - 1])
    gvs = [(tf.clip_by_value(grad, -10, 10), var) for grad, var in gvs]
    metatrain_op = optimizer.apply_gradients(gvs)
    out = {"preloss": [], "postlosses": []}
    with tf.Session() as sess:
        tf.global_variables_initializer().run()
        _set_vars(tf, sess, seed, 0.5)
        for itr in range(steps):
            xs, ys = sinusoid_batch()
            feed_dict = {inputa: xs[:, :K, :], inputb: xs[:, K:, :], labela: ys[:, :K, :], labelb: ys[:, K:, :]}
            if itr == 0:
                out["meta_grads0"] = {v.name: g for (_, v), g in zip(gvs, sess.run([g for g, _ in gvs], feed_dict))}
                out["outputbs0"] = sess.run(outputbs, feed_dict)
            input_tensors = [metatrain_op if itr % 4 else pretrain_op, total_loss1, total_losses2]
            result = sess.run(input_tensors, feed_dict)
            out["preloss"].append(result[1]), out["postlosses"].append(result[2])
        out["vars"] = _values(tf, sess)
    return out


# ------------------------------------------------------------------------------------------
# The PTB word-LM tutorial (tensorflow/models tutorials/rnn/ptb): queue-runner input

def _set_vars_op(tf, seed, scale):
    """_set_vars as one op built before the graph is finalized (a Supervisor's init_fn runs it)."""
    ops = []
    for v in tf.trainable_variables():
        shape = [int(d) for d in v.get_shape()]
        r = np.random.RandomState((seed * 1000003 + zlib.crc32(v.name.encode())) % 2**31)
        ops.append(v.assign(r.uniform(-scale, scale, shape).astype(np.float32)))
    return tf.group(*ops)


def ptb(tf, seed, epochs, supervisor=False):
    rng = np.random.RandomState(seed)
    vocab_size, hidden_size, num_layers, batch_size, num_steps = 24, 10, 2, 3, 4
    learning_rate, max_grad_norm, max_epoch, lr_decay, init_scale = 1.0, 5, 1, 0.5, 0.1
    train_data = list((rng.zipf(1.3, size=80) % vocab_size).astype(int))
    valid_data = list((rng.zipf(1.3, size=40) % vocab_size).astype(int))

    def ptb_producer(raw_data, batch_size, num_steps, name=None):
        with tf.name_scope(name, "PTBProducer", [raw_data, batch_size, num_steps]):
            raw_data = tf.convert_to_tensor(raw_data, name="raw_data", dtype=tf.int32)
            data_len = tf.size(raw_data)
            batch_len = data_len // batch_size
            data = tf.reshape(raw_data[0: batch_size * batch_len], [batch_size, batch_len])
            epoch_size = (batch_len - 1) // num_steps
            assertion = tf.assert_positive(epoch_size, message="epoch_size == 0, decrease batch_size or num_steps")
            with tf.control_dependencies([assertion]):
                epoch_size = tf.identity(epoch_size, name="epoch_size")
            i = tf.train.range_input_producer(epoch_size, shuffle=False).dequeue()
            x = tf.strided_slice(data, [0, i * num_steps], [batch_size, (i + 1) * num_steps])
            x.set_shape([batch_size, num_steps])
            y = tf.strided_slice(data, [0, i * num_steps + 1], [batch_size, (i + 1) * num_steps + 1])
            y.set_shape([batch_size, num_steps])
            return x, y

    class PTBInput(object):
        def __init__(self, data, name=None):
            self.batch_size = batch_size
            self.num_steps = num_steps
            self.epoch_size = ((len(data) // batch_size) - 1) // num_steps
            self.input_data, self.targets = ptb_producer(data, batch_size, num_steps, name=name)

    class PTBModel(object):
        def __init__(self, is_training, input_, keep_prob=1.0):
            self._input = input_
            size = hidden_size
            with tf.device("/cpu:0"):
                embedding = tf.get_variable("embedding", [vocab_size, size], dtype=tf.float32)
                inputs = tf.nn.embedding_lookup(embedding, input_.input_data)
            if is_training and keep_prob < 1:
                inputs = tf.nn.dropout(inputs, keep_prob)

            def lstm_cell():
                return tf.nn.rnn_cell.BasicLSTMCell(size, forget_bias=0.0, state_is_tuple=True,
                                                    reuse=tf.get_variable_scope().reuse)

            def attn_cell():
                if is_training:
                    return tf.nn.rnn_cell.DropoutWrapper(lstm_cell(), output_keep_prob=keep_prob)
                return lstm_cell()
            cell = tf.nn.rnn_cell.MultiRNNCell([attn_cell() for _ in range(num_layers)], state_is_tuple=True)
            self._initial_state = cell.zero_state(batch_size, tf.float32)
            outputs = []
            state = self._initial_state
            with tf.variable_scope("RNN"):
                for time_step in range(num_steps):
                    if time_step > 0:
                        tf.get_variable_scope().reuse_variables()
                    (cell_output, state) = cell(inputs[:, time_step, :], state)
                    outputs.append(cell_output)
            output = tf.reshape(tf.concat(axis=1, values=outputs), [-1, size])
            softmax_w = tf.get_variable("softmax_w", [size, vocab_size], dtype=tf.float32)
            softmax_b = tf.get_variable("softmax_b", [vocab_size], dtype=tf.float32)
            logits = tf.matmul(output, softmax_w) + softmax_b
            # tf.contrib.legacy_seq2seq.sequence_loss_by_example, which TF 2 no longer has
            loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.reshape(input_.targets, [-1]),
                                                                  logits=logits)
            self._cost = cost = tf.reduce_sum(loss) / batch_size
            self._final_state = state
            if not is_training:
                return
            self._lr = tf.Variable(0.0, trainable=False)
            tvars = tf.trainable_variables()
            grads, _ = tf.clip_by_global_norm(tf.gradients(cost, tvars), max_grad_norm)
            optimizer = tf.train.GradientDescentOptimizer(self._lr)
            self._train_op = optimizer.apply_gradients(zip(grads, tvars),
                                                       global_step=tf.train.get_or_create_global_step())
            self._new_lr = tf.placeholder(tf.float32, shape=[], name="new_learning_rate")
            self._lr_update = tf.assign(self._lr, self._new_lr)

        def assign_lr(self, session, lr_value):
            session.run(self._lr_update, feed_dict={self._new_lr: lr_value})

    def run_epoch(session, model, eval_op=None):
        costs = 0.0
        iters = 0
        state = session.run(model._initial_state)
        fetches = {"cost": model._cost, "final_state": model._final_state}
        if eval_op is not None:
            fetches["eval_op"] = eval_op
        step_costs = []
        for step in range(model._input.epoch_size):
            feed_dict = {}
            for i, (c, h) in enumerate(model._initial_state):
                feed_dict[c] = state[i].c
                feed_dict[h] = state[i].h
            vals = session.run(fetches, feed_dict)
            cost = vals["cost"]
            state = vals["final_state"]
            costs += cost
            iters += model._input.num_steps
            step_costs.append(cost)
        return np.exp(costs / iters), step_costs

    initializer = tf.random_uniform_initializer(-init_scale, init_scale)
    with tf.name_scope("Train"):
        train_input = PTBInput(data=train_data, name="TrainInput")
        with tf.variable_scope("Model", reuse=None, initializer=initializer):
            m = PTBModel(is_training=True, input_=train_input)
    with tf.name_scope("Valid"):
        valid_input = PTBInput(data=valid_data, name="ValidInput")
        with tf.variable_scope("Model", reuse=True, initializer=initializer):
            mvalid = PTBModel(is_training=False, input_=valid_input)
    out = {"train_perplexity": [], "valid_perplexity": [], "train_losses": [], "lrs": []}

    def train(session):
        for i in range(epochs):
            lr_decay_i = lr_decay ** max(i + 1 - max_epoch, 0.0)
            m.assign_lr(session, learning_rate * lr_decay_i)
            out["lrs"].append(session.run(m._lr))
            train_perplexity, costs = run_epoch(session, m, eval_op=m._train_op)
            valid_perplexity, _ = run_epoch(session, mvalid)
            out["train_perplexity"].append(train_perplexity)
            out["valid_perplexity"].append(valid_perplexity)
            out["train_losses"].extend(costs)
        out["global_step"] = session.run(tf.train.get_global_step())
        out["vars"] = _values(tf, session)

    if supervisor:  # the tutorial's later form: a Supervisor starts the queue runners and saves
        save_path = tempfile.mkdtemp()
        set_vars = _set_vars_op(tf, seed, init_scale)
        try:
            sv = tf.train.Supervisor(logdir=save_path, init_fn=lambda sess: sess.run(set_vars))
            with sv.managed_session() as session:
                train(session)
                path = sv.saver.save(session, os.path.join(save_path, "model"), global_step=sv.global_step)
            out["saved"] = os.path.basename(path)
            out["ckpt_names"] = sorted(n for n, _ in tf.train.list_variables(path))
        finally:
            shutil.rmtree(save_path, ignore_errors=True)
        return out
    with tf.Session() as session:
        session.run(tf.global_variables_initializer())
        _set_vars(tf, session, seed, init_scale)
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess=session, coord=coord)
        try:
            train(session)
        finally:
            coord.request_stop()
            coord.join(threads)
    return out


PROGRAMS = [
    ("bert_gather", bert, dict(steps=4, one_hot=False)),
    ("bert_one_hot", bert, dict(steps=4, one_hot=True, finetune=False)),
    ("wgan_gp", wgan_gp, dict(steps=5)),
    ("maml_one_update", maml, dict(steps=5, num_updates=1)),
    ("maml_two_updates", maml, dict(steps=4, num_updates=2)),
    ("maml_first_order", maml, dict(steps=4, num_updates=1, stop_grad=True)),
    ("ptb_word_lm", ptb, dict(epochs=3)),
    ("ptb_word_lm_supervisor", ptb, dict(epochs=2, supervisor=True)),
]


@pytest.mark.parametrize("name,program,kwargs", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_program(name, program, kwargs, request):
    if program is bert:  # it calls tf.contrib.layers: TensorFlow's side needs tf_slim
        _SLIM["slim"] = request.getfixturevalue("tf_slim")
    compare_program(program, kwargs)
