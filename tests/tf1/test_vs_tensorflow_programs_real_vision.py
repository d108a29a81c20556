"""More TF1 programs as their authors wrote them (see test_vs_tensorflow_programs_real.py):
vision.  A capsule network (dynamic routing), neural style transfer (the image is the
variable), pix2pix (reflect-free padded convs, hand-made batch norm, conv2d_transpose with an
output_shape, an EMA of the losses), the CIFAR-10 tutorial under MonitoredTrainingSession
(lrn, weight decay in a collection, a queue-fed batch, hooks, the variable averages restored),
a spatial transformer (bilinear sampling by gather) and carpedm20's DCGAN (contrib batch_norm
with updates_collections=None: tf_slim's on TensorFlow's side).
"""
import os
import shutil
import sys
import tempfile

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

from test_vs_tensorflow_programs import _set_vars, _values, compare_program  # noqa: E402
from test_vs_tensorflow_programs_real import _SLIM, _contrib_layers, _set_vars_op  # noqa: E402
from test_vs_tensorflow_feature_columns_layers_fuzz import tf_slim  # noqa: E402,F401  (the patched tf_slim)

tft = tensorflow.compat.v1
tft.disable_eager_execution()
pytestmark = [pytest.mark.filterwarnings("ignore:.*deprecated:UserWarning"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning"),
              pytest.mark.filterwarnings("ignore::UserWarning")]


# ------------------------------------------------------------------------------------------
# A capsule network (naturomics/CapsNet-Tensorflow): primary capsules, dynamic routing with
# stop_gradient between iterations, margin loss, a masked reconstruction decoder

def capsnet(tf, seed, steps):
    rng = np.random.RandomState(seed)
    batch_size, S, num_classes, iter_routing, epsilon = 4, 10, 3, 3, 1e-9
    m_plus, m_minus, lambda_val, regularization_scale = 0.9, 0.1, 0.5, 0.392 * 0.01
    X_all = rng.uniform(size=(batch_size * 3, S, S, 1)).astype(np.float32)
    Y_all = rng.randint(0, num_classes, batch_size * 3).astype(np.int32)

    def squash(vector):
        vec_squared_norm = tf.reduce_sum(tf.square(vector), -2, keep_dims=True)
        scalar_factor = vec_squared_norm / (1 + vec_squared_norm) / tf.sqrt(vec_squared_norm + epsilon)
        return scalar_factor * vector

    def routing(input, b_IJ, num_outputs, num_dims):
        input_shape = input.get_shape().as_list()
        W = tf.get_variable('Weight', shape=[1, input_shape[1], num_dims * num_outputs] + input_shape[-2:],
                            dtype=tf.float32, initializer=tf.random_normal_initializer(stddev=0.01))
        biases = tf.get_variable('bias', shape=(1, 1, num_outputs, num_dims, 1))
        input = tf.tile(input, [1, 1, num_dims * num_outputs, 1, 1])
        u_hat = tf.reduce_sum(W * input, axis=3, keepdims=True)
        u_hat = tf.reshape(u_hat, shape=[-1, input_shape[1], num_outputs, num_dims, 1])
        u_hat_stopped = tf.stop_gradient(u_hat, name='stop_gradient')
        for r_iter in range(iter_routing):
            with tf.variable_scope('iter_' + str(r_iter)):
                c_IJ = tf.nn.softmax(b_IJ, axis=2)
                if r_iter == iter_routing - 1:
                    s_J = tf.multiply(c_IJ, u_hat)
                    s_J = tf.reduce_sum(s_J, axis=1, keepdims=True) + biases
                    v_J = squash(s_J)
                elif r_iter < iter_routing - 1:
                    s_J = tf.multiply(c_IJ, u_hat_stopped)
                    s_J = tf.reduce_sum(s_J, axis=1, keepdims=True) + biases
                    v_J = squash(s_J)
                    v_J_tiled = tf.tile(v_J, [1, input_shape[1], 1, 1, 1])
                    u_produce_v = tf.reduce_sum(u_hat_stopped * v_J_tiled, axis=3, keepdims=True)
                    b_IJ += u_produce_v
        return v_J

    X = tf.placeholder(tf.float32, shape=(batch_size, S, S, 1))
    labels = tf.placeholder(tf.int32, shape=(batch_size,))
    Y = tf.one_hot(labels, depth=num_classes, axis=1, dtype=tf.float32)
    with tf.variable_scope('Conv1_layer'):
        conv1 = tf.layers.conv2d(X, 8, 3, padding='valid', activation=tf.nn.relu)
    with tf.variable_scope('PrimaryCaps_layer'):
        capsules = tf.layers.conv2d(conv1, 4 * 4, 3, strides=2, padding='valid', activation=tf.nn.relu)
        capsules = tf.reshape(capsules, (batch_size, -1, 4, 1))
        caps1 = squash(capsules)
    with tf.variable_scope('DigitCaps_layer'):
        input = tf.reshape(caps1, shape=(batch_size, -1, 1, caps1.shape[-2].value
                                         if hasattr(caps1.shape[-2], "value") else caps1.shape[-2], 1))
        with tf.variable_scope('routing'):
            b_IJ = tf.constant(np.zeros([batch_size, input.shape[1], num_classes, 1, 1], dtype=np.float32))
            caps2 = routing(input, b_IJ, num_outputs=num_classes, num_dims=6)
            caps2 = tf.squeeze(caps2, axis=1)
    with tf.variable_scope('Masking'):
        v_length = tf.sqrt(tf.reduce_sum(tf.square(caps2), axis=2, keepdims=True) + epsilon)
        softmax_v = tf.nn.softmax(v_length, axis=1)
        argmax_idx = tf.to_int32(tf.argmax(softmax_v, axis=1))
        argmax_idx = tf.reshape(argmax_idx, shape=(batch_size, ))
        masked_v = tf.multiply(tf.squeeze(caps2), tf.reshape(Y, (-1, num_classes, 1)))
    with tf.variable_scope('Decoder'):
        vector_j = tf.reshape(masked_v, shape=(batch_size, -1))
        fc1 = tf.layers.dense(vector_j, 16, activation=tf.nn.relu)
        decoded = tf.layers.dense(fc1, S * S, activation=tf.sigmoid)
    max_l = tf.square(tf.maximum(0., m_plus - v_length))
    max_r = tf.square(tf.maximum(0., v_length - m_minus))
    max_l = tf.reshape(max_l, shape=(batch_size, -1))
    max_r = tf.reshape(max_r, shape=(batch_size, -1))
    T_c = Y
    L_c = T_c * max_l + lambda_val * (1 - T_c) * max_r
    margin_loss = tf.reduce_mean(tf.reduce_sum(L_c, axis=1))
    orgin = tf.reshape(X, shape=(batch_size, -1))
    squared = tf.square(decoded - orgin)
    reconstruction_err = tf.reduce_mean(squared)
    total_loss = margin_loss + regularization_scale * reconstruction_err
    global_step = tf.Variable(0, name='global_step', trainable=False)
    optimizer = tf.train.AdamOptimizer(1e-2)
    train_op = optimizer.minimize(total_loss, global_step=global_step)
    correct_prediction = tf.equal(tf.to_int32(labels), argmax_idx)
    accuracy = tf.reduce_sum(tf.cast(correct_prediction, tf.float32))
    out = {"losses": [], "margin_losses": []}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _set_vars(tf, sess, seed, 0.3)
        for step in range(steps):
            i = (step % 3) * batch_size
            fd = {X: X_all[i:i + batch_size], labels: Y_all[i:i + batch_size]}
            l, m, _ = sess.run([total_loss, margin_loss, train_op], fd)
            out["losses"].append(l), out["margin_losses"].append(m)
        out["v_length"], out["acc"] = sess.run([v_length, accuracy], fd)
        out["vars"] = _values(tf, sess)
    return out


# ------------------------------------------------------------------------------------------
# Neural style transfer (anishathalye/neural-style): the image is the variable; gram matrices
# of a small conv net's features, content and style losses, total variation, Adam on [image]

def style_transfer(tf, seed, steps):
    rng = np.random.RandomState(seed)
    S, C = 12, 3
    content = rng.uniform(0, 1, (1, S, S, C)).astype(np.float32)
    style = rng.uniform(0, 1, (1, S, S, C)).astype(np.float32)
    weights = {"conv1_1": rng.normal(size=(3, 3, C, 6)).astype(np.float32) * 0.3,
               "conv1_2": rng.normal(size=(3, 3, 6, 6)).astype(np.float32) * 0.3,
               "conv2_1": rng.normal(size=(3, 3, 6, 8)).astype(np.float32) * 0.3}
    CONTENT_LAYERS, STYLE_LAYERS = ("conv1_2",), ("conv1_1", "conv2_1")

    def net(input_image):
        layers = {}
        current = input_image
        for name in ("conv1_1", "conv1_2", "pool1", "conv2_1"):
            if name.startswith("conv"):
                conv = tf.nn.conv2d(current, tf.constant(weights[name]), strides=(1, 1, 1, 1), padding='SAME')
                current = tf.nn.relu(tf.nn.bias_add(conv, tf.constant(np.full(weights[name].shape[-1], 0.01,
                                                                               np.float32))))
            else:
                current = tf.nn.avg_pool(current, ksize=(1, 2, 2, 1), strides=(1, 2, 2, 1), padding='SAME')
            layers[name] = current
        return layers

    def _tensor_size(tensor):
        from functools import reduce
        from operator import mul
        return reduce(mul, (d for d in tensor.get_shape()[1:]), 1)

    content_features, style_features = {}, {}
    with tf.Graph().as_default(), tf.Session() as sess:
        image = tf.placeholder('float', shape=content.shape)
        feats = net(image)
        for layer in CONTENT_LAYERS:
            content_features[layer] = feats[layer].eval(feed_dict={image: content})
        for layer in STYLE_LAYERS:
            features = feats[layer].eval(feed_dict={image: style})
            features = np.reshape(features, (-1, features.shape[3]))
            style_features[layer] = np.matmul(features.T, features) / features.size
    initial = tf.random_normal(content.shape) * 0.256
    image = tf.Variable(initial)
    feats = net(image)
    content_loss = 0
    for layer in CONTENT_LAYERS:
        content_loss += 5.0 * (2 * tf.nn.l2_loss(feats[layer] - content_features[layer]) /
                               content_features[layer].size)
    style_losses = []
    for style_layer in STYLE_LAYERS:
        layer = feats[style_layer]
        _, height, width, number = map(lambda i: i.value if hasattr(i, "value") else i, layer.get_shape())
        size = height * width * number
        feats_ = tf.reshape(layer, (-1, number))
        gram = tf.matmul(tf.transpose(feats_), feats_) / size
        style_gram = style_features[style_layer]
        style_losses.append(2 * tf.nn.l2_loss(gram - style_gram) / style_gram.size)
    style_loss = 100.0 * tf.reduce_sum(style_losses)
    tv_y_size = _tensor_size(image[:, 1:, :, :])
    tv_x_size = _tensor_size(image[:, :, 1:, :])
    tv_loss = 0.1 * 2 * ((tf.nn.l2_loss(image[:, 1:, :, :] - image[:, :content.shape[1] - 1, :, :]) / tv_y_size) +
                         (tf.nn.l2_loss(image[:, :, 1:, :] - image[:, :, :content.shape[2] - 1, :]) / tv_x_size))
    tv_builtin = tf.reduce_sum(tf.image.total_variation(image))
    loss = content_loss + style_loss + tv_loss
    train_step = tf.train.AdamOptimizer(0.05, 0.9, 0.999, 1e-08).minimize(loss, var_list=[image])
    clip = image.assign(tf.clip_by_value(image, -1.0, 2.0))
    out = {"losses": [], "style_losses": []}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(image.assign(content * 0.5 + 0.25))
        for i in range(steps):
            _, l, sl = sess.run([train_step, loss, style_loss])
            out["losses"].append(l), out["style_losses"].append(sl)
            if i % 5 == 4:
                sess.run(clip)
        out["tv_builtin"] = sess.run(tv_builtin)
        out["vars"] = _values(tf, sess)
    return out


# ------------------------------------------------------------------------------------------
# pix2pix (affinelayer/pix2pix-tensorflow): reflect-padded convs, hand-made batch norm from
# tf.nn.moments, deconvs, two Adams chained by control dependencies, EMA of the losses

def pix2pix(tf, seed, steps):
    rng = np.random.RandomState(seed)
    S, ngf, ndf, EPS, gan_weight, l1_weight = 8, 4, 4, 1e-12, 1.0, 100.0
    A_all = rng.uniform(-1, 1, (3, S, S, 3)).astype(np.float32)
    B_all = np.tanh(A_all[..., ::-1] * 1.5).astype(np.float32)

    # the original (bias-free) conv and deconv: a bias before batch norm gets a gradient of
    # rounding noise, which Adam turns into full steps of either sign
    def conv(batch_input, out_channels, stride):
        with tf.variable_scope("conv"):
            in_channels = batch_input.get_shape()[3]
            filter = tf.get_variable("filter", [4, 4, in_channels, out_channels], dtype=tf.float32,
                                     initializer=tf.random_normal_initializer(0, 0.02))
            padded_input = tf.pad(batch_input, [[0, 0], [1, 1], [1, 1], [0, 0]], mode="CONSTANT")
            return tf.nn.conv2d(padded_input, filter, [1, stride, stride, 1], padding="VALID")

    def deconv(batch_input, out_channels):
        with tf.variable_scope("deconv"):
            batch, in_height, in_width, in_channels = [int(d) for d in batch_input.get_shape()]
            filter = tf.get_variable("filter", [4, 4, out_channels, in_channels], dtype=tf.float32,
                                     initializer=tf.random_normal_initializer(0, 0.02))
            return tf.nn.conv2d_transpose(batch_input, filter, [batch, in_height * 2, in_width * 2, out_channels],
                                          [1, 2, 2, 1], padding="SAME")

    def discrim_conv(batch_input, out_channels, stride):
        return conv(batch_input, out_channels, stride)

    def gen_conv(batch_input, out_channels):
        return conv(batch_input, out_channels, 2)

    def gen_deconv(batch_input, out_channels):
        return deconv(batch_input, out_channels)

    def lrelu(x, a):
        with tf.name_scope("lrelu"):
            x = tf.identity(x)
            return (0.5 * (1 + a)) * x + (0.5 * (1 - a)) * tf.abs(x)

    def batchnorm(inputs):  # the pre-tf.layers version
        with tf.variable_scope("batchnorm"):
            input = tf.identity(inputs)
            channels = input.get_shape()[3]
            offset = tf.get_variable("offset", [channels], dtype=tf.float32, initializer=tf.zeros_initializer())
            scale = tf.get_variable("scale", [channels], dtype=tf.float32,
                                    initializer=tf.random_normal_initializer(1.0, 0.02))
            mean, variance = tf.nn.moments(input, axes=[0, 1, 2], keep_dims=False)
            variance_epsilon = 1e-5
            return tf.nn.batch_normalization(input, mean, variance, offset, scale, variance_epsilon=variance_epsilon)

    def create_generator(generator_inputs, generator_outputs_channels):
        layers = []
        with tf.variable_scope("encoder_1"):
            layers.append(gen_conv(generator_inputs, ngf))
        for out_channels in [ngf * 2, ngf * 4]:
            with tf.variable_scope("encoder_%d" % (len(layers) + 1)):
                rectified = lrelu(layers[-1], 0.2)
                layers.append(batchnorm(gen_conv(rectified, out_channels)))
        num_encoder_layers = len(layers)
        for decoder_layer, (out_channels, dropout) in enumerate([(ngf * 2, 0.0), (ngf, 0.0)]):
            skip_layer = num_encoder_layers - decoder_layer - 1
            with tf.variable_scope("decoder_%d" % (skip_layer + 1)):
                if decoder_layer == 0:
                    input = layers[-1]
                else:
                    input = tf.concat([layers[-1], layers[skip_layer]], axis=3)
                rectified = tf.nn.relu(input)
                output = batchnorm(gen_deconv(rectified, out_channels))
                if dropout > 0.0:
                    output = tf.nn.dropout(output, keep_prob=1 - dropout)
                layers.append(output)
        with tf.variable_scope("decoder_1"):
            input = tf.concat([layers[-1], layers[0]], axis=3)
            rectified = tf.nn.relu(input)
            output = tf.tanh(gen_deconv(rectified, generator_outputs_channels))
            layers.append(output)
        return layers[-1]

    def create_discriminator(discrim_inputs, discrim_targets):
        layers = []
        input = tf.concat([discrim_inputs, discrim_targets], axis=3)
        with tf.variable_scope("layer_1"):
            layers.append(lrelu(discrim_conv(input, ndf, stride=2), 0.2))
        with tf.variable_scope("layer_2"):
            layers.append(lrelu(batchnorm(discrim_conv(layers[-1], ndf * 2, stride=1)), 0.2))
        with tf.variable_scope("layer_3"):
            layers.append(tf.sigmoid(discrim_conv(layers[-1], 1, stride=1)))
        return layers[-1]

    inputs = tf.placeholder(tf.float32, [1, S, S, 3])
    targets = tf.placeholder(tf.float32, [1, S, S, 3])
    with tf.variable_scope("generator"):
        outputs = create_generator(inputs, int(targets.get_shape()[-1]))
    with tf.name_scope("real_discriminator"):
        with tf.variable_scope("discriminator"):
            predict_real = create_discriminator(inputs, targets)
    with tf.name_scope("fake_discriminator"):
        with tf.variable_scope("discriminator", reuse=True):
            predict_fake = create_discriminator(inputs, outputs)
    with tf.name_scope("discriminator_loss"):
        discrim_loss = tf.reduce_mean(-(tf.log(predict_real + EPS) + tf.log(1 - predict_fake + EPS)))
    with tf.name_scope("generator_loss"):
        gen_loss_GAN = tf.reduce_mean(-tf.log(predict_fake + EPS))
        gen_loss_L1 = tf.reduce_mean(tf.abs(targets - outputs))
        gen_loss = gen_loss_GAN * gan_weight + gen_loss_L1 * l1_weight
    with tf.name_scope("discriminator_train"):
        discrim_tvars = [var for var in tf.trainable_variables() if var.name.startswith("discriminator")]
        discrim_optim = tf.train.AdamOptimizer(2e-3, 0.5)
        discrim_grads_and_vars = discrim_optim.compute_gradients(discrim_loss, var_list=discrim_tvars)
        discrim_train = discrim_optim.apply_gradients(discrim_grads_and_vars)
    with tf.name_scope("generator_train"):
        with tf.control_dependencies([discrim_train]):
            gen_tvars = [var for var in tf.trainable_variables() if var.name.startswith("generator")]
            gen_optim = tf.train.AdamOptimizer(2e-3, 0.5)
            gen_grads_and_vars = gen_optim.compute_gradients(gen_loss, var_list=gen_tvars)
            gen_train = gen_optim.apply_gradients(gen_grads_and_vars)
    ema = tf.train.ExponentialMovingAverage(decay=0.99)
    update_losses = ema.apply([discrim_loss, gen_loss_GAN, gen_loss_L1])
    global_step = tf.train.get_or_create_global_step()
    incr_global_step = tf.assign(global_step, global_step + 1)
    train = tf.group(update_losses, incr_global_step, gen_train)
    # pix2pix fetches the averages in the train run itself: whether that read sees this step's
    # update is left to the executor's order (TensorFlow's, unordered there), so read them after
    fetches = {"train": train, "raw_gen_loss": gen_loss}
    averages = {"discrim_loss": ema.average(discrim_loss), "gen_loss_GAN": ema.average(gen_loss_GAN),
                "gen_loss_L1": ema.average(gen_loss_L1)}
    out = {"d_losses": [], "g_gan_losses": [], "g_l1_losses": [], "gen_losses": []}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _set_vars(tf, sess, seed, 0.3)
        for step in range(steps):
            results = sess.run(fetches, {inputs: A_all[step % 3:step % 3 + 1], targets: B_all[step % 3:step % 3 + 1]})
            results.update(sess.run(averages))
            out["d_losses"].append(results["discrim_loss"]), out["g_gan_losses"].append(results["gen_loss_GAN"])
            out["g_l1_losses"].append(results["gen_loss_L1"]), out["gen_losses"].append(results["raw_gen_loss"])
        out["outputs"] = sess.run(outputs, {inputs: A_all[:1]})
        out["vars"] = _values(tf, sess)
    return out


# ------------------------------------------------------------------------------------------
# The CIFAR-10 tutorial (tensorflow/models tutorials/image/cifar10): variables on the CPU with
# weight decay in a 'losses' collection, lrn, an EMA of the losses and of the variables, a
# queue-fed batch, MonitoredTrainingSession with a StopAtStepHook and a logger hook

def cifar10_tutorial(tf, seed, max_steps):
    rng = np.random.RandomState(seed)
    IMAGE_SIZE, NUM_CLASSES, batch_size = 8, 4, 4
    NUM_EXAMPLES_PER_EPOCH_FOR_TRAIN, NUM_EPOCHS_PER_DECAY = 16, 2.0
    MOVING_AVERAGE_DECAY, LEARNING_RATE_DECAY_FACTOR, INITIAL_LEARNING_RATE = 0.9999, 0.5, 0.1
    images_np = rng.uniform(0, 1, (NUM_EXAMPLES_PER_EPOCH_FOR_TRAIN, IMAGE_SIZE, IMAGE_SIZE, 3)).astype(np.float32)
    labels_np = rng.randint(0, NUM_CLASSES, NUM_EXAMPLES_PER_EPOCH_FOR_TRAIN).astype(np.int32)

    def _variable_on_cpu(name, shape, initializer):
        with tf.device('/cpu:0'):
            var = tf.get_variable(name, shape, initializer=initializer, dtype=tf.float32)
        return var

    def _variable_with_weight_decay(name, shape, stddev, wd):
        var = _variable_on_cpu(name, shape, tf.truncated_normal_initializer(stddev=stddev, dtype=tf.float32))
        if wd is not None:
            weight_decay = tf.multiply(tf.nn.l2_loss(var), wd, name='weight_loss')
            tf.add_to_collection('losses', weight_decay)
        return var

    def distorted_inputs():
        image, label = tf.train.slice_input_producer([images_np, labels_np], shuffle=False)
        float_image = tf.image.per_image_standardization(image)
        float_image.set_shape([IMAGE_SIZE, IMAGE_SIZE, 3])
        images, label_batch = tf.train.batch([float_image, label], batch_size=batch_size, num_threads=1,
                                             capacity=3 * batch_size)
        return images, tf.reshape(label_batch, [batch_size])

    def inference(images):
        with tf.variable_scope('conv1') as scope:
            kernel = _variable_with_weight_decay('weights', shape=[3, 3, 3, 8], stddev=5e-2, wd=None)
            conv = tf.nn.conv2d(images, kernel, [1, 1, 1, 1], padding='SAME')
            biases = _variable_on_cpu('biases', [8], tf.constant_initializer(0.0))
            pre_activation = tf.nn.bias_add(conv, biases)
            conv1 = tf.nn.relu(pre_activation, name=scope.name)
        pool1 = tf.nn.max_pool(conv1, ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding='SAME', name='pool1')
        norm1 = tf.nn.lrn(pool1, 4, bias=1.0, alpha=0.001 / 9.0, beta=0.75, name='norm1')
        with tf.variable_scope('conv2') as scope:
            kernel = _variable_with_weight_decay('weights', shape=[3, 3, 8, 8], stddev=5e-2, wd=None)
            conv = tf.nn.conv2d(norm1, kernel, [1, 1, 1, 1], padding='SAME')
            biases = _variable_on_cpu('biases', [8], tf.constant_initializer(0.1))
            pre_activation = tf.nn.bias_add(conv, biases)
            conv2 = tf.nn.relu(pre_activation, name=scope.name)
        norm2 = tf.nn.lrn(conv2, 4, bias=1.0, alpha=0.001 / 9.0, beta=0.75, name='norm2')
        pool2 = tf.nn.max_pool(norm2, ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding='SAME', name='pool2')
        with tf.variable_scope('local3') as scope:
            reshape = tf.reshape(pool2, [images.get_shape().as_list()[0], -1])
            dim = reshape.get_shape()[1]
            weights = _variable_with_weight_decay('weights', shape=[dim, 16], stddev=0.04, wd=0.004)
            biases = _variable_on_cpu('biases', [16], tf.constant_initializer(0.1))
            local3 = tf.nn.relu(tf.matmul(reshape, weights) + biases, name=scope.name)
        with tf.variable_scope('softmax_linear') as scope:
            weights = _variable_with_weight_decay('weights', [16, NUM_CLASSES], stddev=1 / 16.0, wd=None)
            biases = _variable_on_cpu('biases', [NUM_CLASSES], tf.constant_initializer(0.0))
            softmax_linear = tf.add(tf.matmul(local3, weights), biases, name=scope.name)
        return softmax_linear

    def loss(logits, labels):
        labels = tf.cast(labels, tf.int64)
        cross_entropy = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits,
                                                                       name='cross_entropy_per_example')
        cross_entropy_mean = tf.reduce_mean(cross_entropy, name='cross_entropy')
        tf.add_to_collection('losses', cross_entropy_mean)
        return tf.add_n(tf.get_collection('losses'), name='total_loss')

    def _add_loss_summaries(total_loss):
        loss_averages = tf.train.ExponentialMovingAverage(0.9, name='avg')
        losses = tf.get_collection('losses')
        loss_averages_op = loss_averages.apply(losses + [total_loss])
        for l in losses + [total_loss]:
            tf.summary.scalar(l.op.name + ' (raw)', l)
            tf.summary.scalar(l.op.name, loss_averages.average(l))
        return loss_averages_op

    def train(total_loss, global_step):
        num_batches_per_epoch = NUM_EXAMPLES_PER_EPOCH_FOR_TRAIN / batch_size
        decay_steps = int(num_batches_per_epoch * NUM_EPOCHS_PER_DECAY)
        lr = tf.train.exponential_decay(INITIAL_LEARNING_RATE, global_step, decay_steps, LEARNING_RATE_DECAY_FACTOR,
                                        staircase=True)
        tf.summary.scalar('learning_rate', lr)
        loss_averages_op = _add_loss_summaries(total_loss)
        with tf.control_dependencies([loss_averages_op]):
            opt = tf.train.GradientDescentOptimizer(lr)
            grads = opt.compute_gradients(total_loss)
        apply_gradient_op = opt.apply_gradients(grads, global_step=global_step)
        for var in tf.trainable_variables():
            tf.summary.histogram(var.op.name, var)
        for grad, var in grads:
            if grad is not None:
                tf.summary.histogram(var.op.name + '/gradients', grad)
        variable_averages = tf.train.ExponentialMovingAverage(MOVING_AVERAGE_DECAY, global_step)
        with tf.control_dependencies([apply_gradient_op]):
            variables_averages_op = variable_averages.apply(tf.trainable_variables())
        return variables_averages_op, variable_averages

    train_dir = tempfile.mkdtemp()
    out = {"losses": [], "steps_seen": []}
    try:
        with tf.Graph().as_default():
            global_step = tf.train.get_or_create_global_step()
            with tf.device('/cpu:0'):
                images, labels = distorted_inputs()
            logits = inference(images)
            total = loss(logits, labels)
            train_op, variable_averages = train(total, global_step)
            set_vars = _set_vars_op(tf, seed, 0.2)

            class _LoggerHook(tf.train.SessionRunHook):
                def begin(self):
                    self._step = -1

                def before_run(self, run_context):
                    self._step += 1
                    return tf.train.SessionRunArgs([total, global_step])

                def after_run(self, run_context, run_values):
                    loss_value, step = run_values.results
                    out["losses"].append(loss_value), out["steps_seen"].append(step)

            scaffold = tf.train.Scaffold(init_fn=lambda scaffold, sess: sess.run(set_vars))
            with tf.train.MonitoredTrainingSession(
                    checkpoint_dir=train_dir, scaffold=scaffold,
                    hooks=[tf.train.StopAtStepHook(last_step=max_steps), tf.train.NanTensorHook(total), _LoggerHook()],
                    save_summaries_steps=2, log_step_count_steps=None) as mon_sess:
                while not mon_sess.should_stop():
                    mon_sess.run(train_op)
            ckpt = tf.train.latest_checkpoint(train_dir)
            out["ckpt"] = os.path.basename(ckpt)
            out["ckpt_names"] = sorted(n for n, _ in tf.train.list_variables(ckpt))
            saver = tf.train.Saver(variable_averages.variables_to_restore())
            with tf.Session() as sess:
                saver.restore(sess, ckpt)
                out["restored_averages"] = {v.name: x for v, x in zip(tf.trainable_variables(),
                                                                       sess.run(tf.trainable_variables()))}
        out["n_events_files"] = len([f for f in os.listdir(train_dir) if f.startswith("events.out.tfevents")])
    finally:
        shutil.rmtree(train_dir, ignore_errors=True)
    return out


# ------------------------------------------------------------------------------------------
# A spatial transformer (daviddao/spatial-transformer-tensorflow's transformer()): an affine
# grid from linspace and a hand-made meshgrid, bilinear sampling by tf.gather on a flat image

def spatial_transformer(tf, seed, steps):
    rng = np.random.RandomState(seed)
    B, H, W, C = 4, 8, 8, 1
    imgs = rng.uniform(0, 1, (B * 2, H, W, C)).astype(np.float32)
    ys = rng.randint(0, 3, B * 2).astype(np.int64)

    def transformer(U, theta, out_size, name='SpatialTransformer'):
        def _repeat(x, n_repeats):
            with tf.variable_scope('_repeat'):
                rep = tf.transpose(tf.expand_dims(tf.ones(shape=tf.stack([n_repeats, ])), 1), [1, 0])
                rep = tf.cast(rep, 'int32')
                x = tf.matmul(tf.reshape(x, (-1, 1)), rep)
                return tf.reshape(x, [-1])

        def _interpolate(im, x, y, out_size):
            with tf.variable_scope('_interpolate'):
                num_batch = tf.shape(im)[0]
                height = tf.shape(im)[1]
                width = tf.shape(im)[2]
                channels = tf.shape(im)[3]
                x = tf.cast(x, 'float32')
                y = tf.cast(y, 'float32')
                height_f = tf.cast(height, 'float32')
                width_f = tf.cast(width, 'float32')
                out_height = out_size[0]
                out_width = out_size[1]
                zero = tf.zeros([], dtype='int32')
                max_y = tf.cast(tf.shape(im)[1] - 1, 'int32')
                max_x = tf.cast(tf.shape(im)[2] - 1, 'int32')
                x = (x + 1.0) * (width_f) / 2.0
                y = (y + 1.0) * (height_f) / 2.0
                x0 = tf.cast(tf.floor(x), 'int32')
                x1 = x0 + 1
                y0 = tf.cast(tf.floor(y), 'int32')
                y1 = y0 + 1
                x0 = tf.clip_by_value(x0, zero, max_x)
                x1 = tf.clip_by_value(x1, zero, max_x)
                y0 = tf.clip_by_value(y0, zero, max_y)
                y1 = tf.clip_by_value(y1, zero, max_y)
                dim2 = width
                dim1 = width * height
                base = _repeat(tf.range(num_batch) * dim1, out_height * out_width)
                base_y0 = base + y0 * dim2
                base_y1 = base + y1 * dim2
                idx_a = base_y0 + x0
                idx_b = base_y1 + x0
                idx_c = base_y0 + x1
                idx_d = base_y1 + x1
                im_flat = tf.reshape(im, tf.stack([-1, channels]))
                im_flat = tf.cast(im_flat, 'float32')
                Ia = tf.gather(im_flat, idx_a)
                Ib = tf.gather(im_flat, idx_b)
                Ic = tf.gather(im_flat, idx_c)
                Id = tf.gather(im_flat, idx_d)
                x0_f = tf.cast(x0, 'float32')
                x1_f = tf.cast(x1, 'float32')
                y0_f = tf.cast(y0, 'float32')
                y1_f = tf.cast(y1, 'float32')
                wa = tf.expand_dims(((x1_f - x) * (y1_f - y)), 1)
                wb = tf.expand_dims(((x1_f - x) * (y - y0_f)), 1)
                wc = tf.expand_dims(((x - x0_f) * (y1_f - y)), 1)
                wd = tf.expand_dims(((x - x0_f) * (y - y0_f)), 1)
                return tf.add_n([wa * Ia, wb * Ib, wc * Ic, wd * Id])

        def _meshgrid(height, width):
            with tf.variable_scope('_meshgrid'):
                x_t = tf.matmul(tf.ones(shape=tf.stack([height, 1])),
                                tf.transpose(tf.expand_dims(tf.linspace(-1.0, 1.0, width), 1), [1, 0]))
                y_t = tf.matmul(tf.expand_dims(tf.linspace(-1.0, 1.0, height), 1), tf.ones(shape=tf.stack([1, width])))
                x_t_flat = tf.reshape(x_t, (1, -1))
                y_t_flat = tf.reshape(y_t, (1, -1))
                ones = tf.ones_like(x_t_flat)
                return tf.concat(axis=0, values=[x_t_flat, y_t_flat, ones])

        def _transform(theta, input_dim, out_size):
            with tf.variable_scope('_transform'):
                num_batch = tf.shape(input_dim)[0]
                num_channels = tf.shape(input_dim)[3]
                theta = tf.reshape(theta, (-1, 2, 3))
                theta = tf.cast(theta, 'float32')
                out_height = out_size[0]
                out_width = out_size[1]
                grid = _meshgrid(out_height, out_width)
                grid = tf.expand_dims(grid, 0)
                grid = tf.reshape(grid, [-1])
                grid = tf.tile(grid, tf.stack([num_batch]))
                grid = tf.reshape(grid, tf.stack([num_batch, 3, -1]))
                T_g = tf.matmul(theta, grid)
                x_s = tf.slice(T_g, [0, 0, 0], [-1, 1, -1])
                y_s = tf.slice(T_g, [0, 1, 0], [-1, 1, -1])
                x_s_flat = tf.reshape(x_s, [-1])
                y_s_flat = tf.reshape(y_s, [-1])
                input_transformed = _interpolate(input_dim, x_s_flat, y_s_flat, out_size)
                return tf.reshape(input_transformed, tf.stack([num_batch, out_height, out_width, num_channels]))

        with tf.variable_scope(name):
            return _transform(theta, U, out_size)

    x = tf.placeholder(tf.float32, [None, H, W, C])
    y = tf.placeholder(tf.int64, [None])
    with tf.variable_scope('loc'):
        W_fc_loc1 = tf.get_variable("W_fc_loc1", [H * W * C, 6], initializer=tf.zeros_initializer())
        initial = np.array([[0.8, 0.1, 0.05], [-0.1, 0.9, -0.05]]).astype('float32').flatten()
        b_fc_loc1 = tf.Variable(initial_value=initial, name='b_fc_loc1')
        theta = tf.nn.tanh(tf.matmul(tf.reshape(x, [-1, H * W * C]), W_fc_loc1) + b_fc_loc1)
    h_trans = transformer(x, theta, (6, 6))
    logits = tf.layers.dense(tf.reshape(h_trans, [-1, 36]), 3, name="classifier")
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    grads = tf.gradients(loss, [W_fc_loc1, b_fc_loc1, x])
    train_op = tf.train.AdamOptimizer(0.01).minimize(loss)
    out = {"losses": []}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _set_vars(tf, sess, seed, 0.02, [W_fc_loc1])
        _set_vars(tf, sess, seed, 0.5, tf.trainable_variables("classifier"))
        fd = {x: imgs[:B], y: ys[:B]}
        out["h_trans"], out["theta"] = sess.run([h_trans, theta], fd)
        out["grads0"] = dict(zip(["W_fc_loc1", "b_fc_loc1", "x"], sess.run(grads, fd)))
        for step in range(steps):
            i = (step % 2) * B
            out["losses"].append(sess.run([loss, train_op], {x: imgs[i:i + B], y: ys[i:i + B]})[0])
        out["vars"] = _values(tf, sess)
    return out


# ------------------------------------------------------------------------------------------
# DCGAN (carpedm20/DCGAN-tensorflow's ops.py and model.py): a batch_norm class over
# tf.contrib.layers.batch_norm with updates_collections=None, deconv2d by conv2d_transpose,
# linear() with with_w, sigmoid cross-entropy losses, 't_vars' split by name

def dcgan(tf, seed, steps):
    rng = np.random.RandomState(seed)
    batch_size, output_height, z_dim, gf_dim, df_dim, c_dim = 4, 16, 5, 4, 4, 1
    images_np = np.tanh(rng.normal(size=(batch_size * 3, output_height, output_height, c_dim))).astype(np.float32)
    contrib_layers = _contrib_layers(tf)

    class batch_norm(object):
        def __init__(self, epsilon=1e-5, momentum=0.9, name="batch_norm"):
            with tf.variable_scope(name):
                self.epsilon = epsilon
                self.momentum = momentum
                self.name = name

        def __call__(self, x, train=True):
            return contrib_layers.batch_norm(x, decay=self.momentum, updates_collections=None,
                                             epsilon=self.epsilon, scale=True, is_training=train, scope=self.name)

    def conv2d(input_, output_dim, k_h=3, k_w=3, d_h=2, d_w=2, stddev=0.02, name="conv2d"):
        with tf.variable_scope(name):
            w = tf.get_variable('w', [k_h, k_w, input_.get_shape()[-1], output_dim],
                                initializer=tf.truncated_normal_initializer(stddev=stddev))
            conv = tf.nn.conv2d(input_, w, strides=[1, d_h, d_w, 1], padding='SAME')
            biases = tf.get_variable('biases', [output_dim], initializer=tf.constant_initializer(0.0))
            conv = tf.reshape(tf.nn.bias_add(conv, biases), conv.get_shape())
            return conv

    def deconv2d(input_, output_shape, k_h=3, k_w=3, d_h=2, d_w=2, stddev=0.02, name="deconv2d", with_w=False):
        with tf.variable_scope(name):
            w = tf.get_variable('w', [k_h, k_w, output_shape[-1], input_.get_shape()[-1]],
                                initializer=tf.random_normal_initializer(stddev=stddev))
            deconv = tf.nn.conv2d_transpose(input_, w, output_shape=output_shape, strides=[1, d_h, d_w, 1])
            biases = tf.get_variable('biases', [output_shape[-1]], initializer=tf.constant_initializer(0.0))
            deconv = tf.reshape(tf.nn.bias_add(deconv, biases), deconv.get_shape())
            if with_w:
                return deconv, w, biases
            return deconv

    def lrelu(x, leak=0.2, name="lrelu"):
        return tf.maximum(x, leak * x)

    def linear(input_, output_size, scope=None, stddev=0.02, bias_start=0.0, with_w=False):
        shape = input_.get_shape().as_list()
        with tf.variable_scope(scope or "Linear"):
            matrix = tf.get_variable("Matrix", [shape[1], output_size], tf.float32,
                                     tf.random_normal_initializer(stddev=stddev))
            bias = tf.get_variable("bias", [output_size], initializer=tf.constant_initializer(bias_start))
            if with_w:
                return tf.matmul(input_, matrix) + bias, matrix, bias
            return tf.matmul(input_, matrix) + bias

    d_bn1, d_bn2 = batch_norm(name='d_bn1'), batch_norm(name='d_bn2')
    g_bn0, g_bn1, g_bn2 = batch_norm(name='g_bn0'), batch_norm(name='g_bn1'), batch_norm(name='g_bn2')

    def discriminator(image, reuse=False):
        with tf.variable_scope("discriminator") as scope:
            if reuse:
                scope.reuse_variables()
            h0 = lrelu(conv2d(image, df_dim, name='d_h0_conv'))
            h1 = lrelu(d_bn1(conv2d(h0, df_dim * 2, name='d_h1_conv')))
            h2 = lrelu(d_bn2(conv2d(h1, df_dim * 4, name='d_h2_conv')))
            h3 = linear(tf.reshape(h2, [batch_size, -1]), 1, 'd_h3_lin')
            return tf.nn.sigmoid(h3), h3

    def generator(z):
        with tf.variable_scope("generator"):
            s_h, s_w = output_height, output_height
            s_h2, s_h4, s_h8 = s_h // 2, s_h // 4, s_h // 8
            z_, h0_w, h0_b = linear(z, gf_dim * 4 * s_h8 * s_h8, 'g_h0_lin', with_w=True)
            # DCGAN reshapes to [-1, ...]: TF 1.x's conv2d_transpose then took its batch from
            # output_shape (collflow too), TF 2's from the input (None), which breaks the
            # reshape to deconv.get_shape() below; a known batch keeps both runnable
            h0 = tf.reshape(z_, [batch_size, s_h8, s_h8, gf_dim * 4])
            h0 = tf.nn.relu(g_bn0(h0))
            h1, h1_w, h1_b = deconv2d(h0, [batch_size, s_h4, s_h4, gf_dim * 2], name='g_h1', with_w=True)
            h1 = tf.nn.relu(g_bn1(h1))
            h2, h2_w, h2_b = deconv2d(h1, [batch_size, s_h2, s_h2, gf_dim], name='g_h2', with_w=True)
            h2 = tf.nn.relu(g_bn2(h2))
            h3, h3_w, h3_b = deconv2d(h2, [batch_size, s_h, s_w, c_dim], name='g_h3', with_w=True)
            return tf.nn.tanh(h3)

    inputs = tf.placeholder(tf.float32, [batch_size, output_height, output_height, c_dim], name='real_images')
    z = tf.placeholder(tf.float32, [None, z_dim], name='z')
    G = generator(z)
    D, D_logits = discriminator(inputs, reuse=False)
    D_, D_logits_ = discriminator(G, reuse=True)

    def sigmoid_cross_entropy_with_logits(x, y):
        return tf.nn.sigmoid_cross_entropy_with_logits(logits=x, labels=y)

    d_loss_real = tf.reduce_mean(sigmoid_cross_entropy_with_logits(D_logits, tf.ones_like(D)))
    d_loss_fake = tf.reduce_mean(sigmoid_cross_entropy_with_logits(D_logits_, tf.zeros_like(D_)))
    g_loss = tf.reduce_mean(sigmoid_cross_entropy_with_logits(D_logits_, tf.ones_like(D_)))
    d_loss = d_loss_real + d_loss_fake
    t_vars = tf.trainable_variables()
    d_vars = [var for var in t_vars if 'd_' in var.name]
    g_vars = [var for var in t_vars if 'g_' in var.name]
    d_optim = tf.train.AdamOptimizer(2e-4, beta1=0.5).minimize(d_loss, var_list=d_vars)
    g_optim = tf.train.AdamOptimizer(2e-4, beta1=0.5).minimize(g_loss, var_list=g_vars)
    d_grads = tf.gradients(d_loss, d_vars)
    out = {"d_losses": [], "g_losses": [], "n_d_vars": len(d_vars), "n_g_vars": len(g_vars)}
    with tf.Session() as sess:
        tf.global_variables_initializer().run()
        _set_vars(tf, sess, seed, 0.3)
        fd0 = {inputs: images_np[:batch_size], z: rng.uniform(-1, 1, [batch_size, z_dim]).astype(np.float32)}
        # a bias that batch norm subtracts again has a gradient of rounding noise, which Adam
        # turns into steps of either sign: those (their slots, and the moving means that follow
        # them) are left out.  So are the discriminator's moving variances: d_optim runs D twice
        # (real and fake), so each d_bn makes two in-place updates (updates_collections=None)
        # with no order between them, and TF runs them in either order from run to run (the
        # EMA is not commutative: 1 run in 3 differed by 0.7%)
        noise = ("g_h0_lin/bias", "g_h1/biases", "g_h2/biases", "d_h1_conv/biases", "d_h2_conv/biases",
                 "moving_mean", "d_bn1/moving_variance", "d_bn2/moving_variance")
        out["d_grads0"] = {v.name: g for v, g in zip(d_vars, sess.run(d_grads, fd0)) if not any(n in v.name for n in noise)}
        for idx in range(steps):
            batch_images = images_np[(idx % 3) * batch_size:(idx % 3 + 1) * batch_size]
            batch_z = rng.uniform(-1, 1, [batch_size, z_dim]).astype(np.float32)
            sess.run(d_optim, feed_dict={inputs: batch_images, z: batch_z})
            sess.run(g_optim, feed_dict={z: batch_z})
            sess.run(g_optim, feed_dict={z: batch_z})
            errD_fake = d_loss_fake.eval({z: batch_z})
            errD_real = d_loss_real.eval({inputs: batch_images})
            errG = g_loss.eval({z: batch_z})
            out["d_losses"].append(errD_fake + errD_real), out["g_losses"].append(errG)
        out["vars"] = {k: v for k, v in _values(tf, sess).items() if not any(n in k for n in noise)}
    return out


PROGRAMS = [
    ("capsnet", capsnet, dict(steps=8)),
    ("style_transfer", style_transfer, dict(steps=20)),
    ("pix2pix", pix2pix, dict(steps=6)),
    ("cifar10_tutorial_monitored", cifar10_tutorial, dict(max_steps=10)),
    ("spatial_transformer", spatial_transformer, dict(steps=10)),
    ("dcgan", dcgan, dict(steps=5)),
]


@pytest.mark.parametrize("name,program,kwargs", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_program(name, program, kwargs, request):
    if program is dcgan:  # it calls tf.contrib.layers: TensorFlow's side needs tf_slim
        _SLIM["slim"] = request.getfixturevalue("tf_slim")
    compare_program(program, kwargs)
