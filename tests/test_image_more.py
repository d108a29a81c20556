"""tf.image's box ops (sample_distorted_bounding_box, draw_bounding_boxes, crop_and_resize,
non-max suppression), bicubic and area resizing, and the quality / colour / gradient helpers:
by hand (no TensorFlow needed) and against TensorFlow 1.x where it is installed."""
import numpy as np
import pytest

import collflow.compat.v1 as tf
import gradtable_image
from gradcheck import check_case
from tf_peer import run_in_both


def _run(fetches, feed=None):
    with tf.Session() as s:
        return s.run(fetches, feed or {})


# -- sample_distorted_bounding_box ----------------------------------------------------------------


def _sdbb(seed, seed2, n=200, **kw):
    with tf.Graph().as_default():
        begin, size, box = tf.image.sample_distorted_bounding_box(
            [60, 80, 3], np.array([[[0.1, 0.2, 0.6, 0.7]]], np.float32), seed=seed, seed2=seed2, **kw)
        with tf.Session() as s:
            return [s.run([begin, size, box]) for _ in range(n)]


def test_sample_distorted_bounding_box_constraints():
    draws = _sdbb(3, 7, min_object_covered=0.5, aspect_ratio_range=[0.5, 2.0], area_range=[0.1, 0.9])
    obj = (6, 16, 36, 56)   # the box in pixels: int(coord * size), as TF: (ymin, xmin, ymax, xmax)
    whole = 0
    for begin, size, box in draws:
        assert begin.dtype == np.int32 and size[2] == -1 and begin[2] == 0
        y, x, h, w = begin[0], begin[1], size[0], size[1]
        assert 0 <= y and 0 <= x and y + h <= 60 and x + w <= 80
        np.testing.assert_allclose(box, [[[y / 60, x / 80, (y + h) / 60, (x + w) / 80]]], rtol=1e-6)
        if (h, w) == (60, 80):
            whole += 1
            continue
        assert 0.1 * 4800 <= h * w <= 0.9 * 4800
        assert 0.5 - 1 / h <= w / h <= 2.0 + 1 / h    # the aspect ratio up to rounding of the width
        iy = max(0, min(y + h, obj[2]) - max(y, obj[0]))
        ix = max(0, min(x + w, obj[3]) - max(x, obj[1]))
        assert iy * ix / ((obj[2] - obj[0]) * (obj[3] - obj[1])) >= 0.5
    assert whole < len(draws) // 4
    assert len({tuple(d[0]) + tuple(d[1]) for d in draws}) > 50   # it varies


def test_sample_distorted_bounding_box_seeded_repeats():
    a, b, c = _sdbb(5, 1, n=20), _sdbb(5, 1, n=20), _sdbb(6, 1, n=20)
    assert all(np.array_equal(x[0], y[0]) and np.array_equal(x[1], y[1]) for x, y in zip(a, b))
    assert not all(np.array_equal(x[1], y[1]) for x, y in zip(a, c))


def test_sample_distorted_bounding_box_no_boxes():
    with tf.Graph().as_default():
        out = tf.image.sample_distorted_bounding_box([10, 10, 3], np.zeros((1, 0, 4), np.float32), seed=1,
                                                     use_image_if_no_bounding_boxes=True, area_range=[0.5, 1.0])
        b, s, _ = _run(out)
        assert s[0] * s[1] >= 50
        bad = tf.image.sample_distorted_bounding_box([10, 10, 3], np.zeros((1, 0, 4), np.float32), seed=1)
        with pytest.raises(tf.errors.InvalidArgumentError):
            _run(bad)


def test_sample_distorted_bounding_box_matches_tf_statistics():
    """Distribution of crop areas and aspect ratios close to TF's (TF's draws differ)."""
    import tf_peer
    ours, theirs = [], []
    for T, acc in ((tf, ours), (tf_peer.tensorflow_v1(), theirs)):
        with T.Graph().as_default():
            _, size, _ = T.image.sample_distorted_bounding_box(
                [100, 120, 3], np.array([[[0.0, 0.0, 1.0, 1.0]]], np.float32), seed=11, seed2=3,
                min_object_covered=0.1)
            with T.Session() as s:
                acc.extend(s.run(size) for _ in range(400))
    for acc in (ours, theirs):
        acc[:] = [(float(v[0] * v[1]) / 12000, float(v[1]) / float(v[0])) for v in acc]
    oa, ta = np.array(ours), np.array(theirs)
    assert abs(oa[:, 0].mean() - ta[:, 0].mean()) < 0.06
    assert abs(oa[:, 1].mean() - ta[:, 1].mean()) < 0.08
    assert oa[:, 0].min() >= 0.05 - 1e-3 and ta[:, 0].min() >= 0.05 - 1e-3


# -- draw_bounding_boxes --------------------------------------------------------------------------


def test_draw_bounding_boxes_by_hand():
    img = np.zeros((1, 5, 6, 3), np.float32)
    with tf.Graph().as_default():
        out = _run(tf.image.draw_bounding_boxes(img, np.array([[[0.25, 0.2, 0.75, 0.8]]], np.float32)))
    want = img.copy()
    yellow = [1, 1, 0]
    want[0, 1, 1:5] = want[0, 3, 1:5] = yellow
    want[0, 1:4, 1] = want[0, 1:4, 4] = yellow
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("depth,colors", [(3, None), (4, None), (1, None), (3, [[0.2, 0.4, 0.6, 1.0], [1, 0, 1, 1]])])
def test_draw_bounding_boxes_matches_tf(depth, colors):
    rng = np.random.default_rng(0)
    img = rng.uniform(size=(2, 7, 9, depth)).astype(np.float32)
    boxes = np.array([[[0.1, 0.1, 0.9, 0.5], [-0.2, 0.3, 0.5, 1.3], [0.5, 0.5, 0.4, 0.6]],
                      [[0.0, 0.0, 1.0, 1.0], [0.3, 0.2, 0.31, 0.9], [1.2, 0.1, 1.5, 0.2]]], np.float32)

    def program(T):
        kw = {} if colors is None else {"colors": np.asarray(colors, np.float32)}
        return T.image.draw_bounding_boxes(img, boxes, **kw)
    ours, theirs = run_in_both(program)
    np.testing.assert_array_equal(ours, theirs)


# -- crop_and_resize ------------------------------------------------------------------------------


def test_crop_and_resize_by_hand():
    img = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    with tf.Graph().as_default():
        out = _run(tf.image.crop_and_resize(img, [[0, 0, 1, 1], [0, 0, 0.5, 0.5], [0.5, 0.5, 2, 2]], [0, 0, 0],
                                            [2, 2], extrapolation_value=-1))
    np.testing.assert_allclose(out[0, ..., 0], [[0, 3], [12, 15]])
    np.testing.assert_allclose(out[1, ..., 0], [[0, 1.5], [6, 7.5]])
    np.testing.assert_allclose(out[2, ..., 0], [[7.5, -1], [-1, -1]])


@pytest.mark.parametrize("method", ["bilinear", "nearest"])
def test_crop_and_resize_matches_tf(method):
    rng = np.random.default_rng(1)
    img = rng.uniform(-1, 1, size=(2, 6, 7, 3)).astype(np.float32)
    boxes = np.array([[0.1, 0.2, 0.8, 0.9], [0.9, 0.8, 0.1, 0.3], [-0.3, -0.1, 1.2, 0.7], [0.4, 0.4, 0.4, 0.6]],
                     np.float32)
    ind = np.array([0, 1, 1, 0], np.int32)
    r_val = rng.uniform(size=(4, 5, 4, 3)).astype(np.float32)

    def program(T):
        x = T.constant(img)
        b = T.constant(boxes)
        y = T.image.crop_and_resize(x, b, ind, [5, 4], method=method, extrapolation_value=0.5)
        loss = T.reduce_sum(y * r_val)
        return [y] + T.gradients(loss, [x, b] if method == "bilinear" else [x])
    ours, theirs = run_in_both(program)
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o, t, rtol=1e-5, atol=1e-5)


def test_crop_and_resize_uint8_and_box_indices_keyword():
    img = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3, 1)

    def program(T):
        return T.image.crop_and_resize(img, [[0, 0, 1, 1]], box_ind=[1], crop_size=[3, 2])
    ours, theirs = run_in_both(program)
    assert ours.dtype == np.float32
    np.testing.assert_allclose(ours, theirs)
    with tf.Graph().as_default():
        np.testing.assert_allclose(_run(tf.image.crop_and_resize(img, [[0, 0, 1, 1]], box_indices=[1],
                                                                 crop_size=[3, 2])), ours)


# -- non-max suppression --------------------------------------------------------------------------

_BOXES = np.array([[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, -0.1, 1, 0.9], [0, 10, 1, 11], [0, 10.1, 1, 11.1],
                   [0, 100, 1, 101]], np.float32)
_SCORES = np.array([0.9, 0.75, 0.6, 0.95, 0.5, 0.3], np.float32)


def test_non_max_suppression_by_hand():
    with tf.Graph().as_default():
        sel = _run(tf.image.non_max_suppression(_BOXES, _SCORES, 3, iou_threshold=0.5))
        np.testing.assert_array_equal(sel, [3, 0, 5])
        sel = _run(tf.image.non_max_suppression(_BOXES, _SCORES, 10, 0.5, score_threshold=0.4))
        np.testing.assert_array_equal(sel, [3, 0])


def test_non_max_suppression_matches_tf():
    rng = np.random.default_rng(2)
    corners = rng.uniform(0, 1, size=(40, 2, 2)).astype(np.float32)
    boxes = np.concatenate([corners[:, 0], corners[:, 0] + 0.3 * corners[:, 1]], axis=1)
    boxes[::5] = boxes[::5][:, [2, 3, 0, 1]]      # some with flipped corners
    scores = rng.uniform(size=40).astype(np.float32)
    scores[7] = scores[3]                          # a tie (lower index first)

    def program(T):
        out = [T.image.non_max_suppression(boxes, scores, 20, 0.3),
               T.image.non_max_suppression(boxes, scores, 30, 0.6, score_threshold=0.2)]
        out += list(T.image.non_max_suppression_with_scores(boxes, scores, 15, 0.4, 0.1))
        out += list(T.image.non_max_suppression_with_scores(boxes, scores, 25, 0.5, soft_nms_sigma=0.5))
        out += list(T.image.non_max_suppression_padded(T.constant(boxes), scores, 30, 0.3,
                                                       pad_to_max_output_size=False))
        out += list(T.image.non_max_suppression_padded(T.constant(_BOXES), _SCORES, 5, 0.5,
                                                       pad_to_max_output_size=True))
        return out
    ours, theirs = run_in_both(program)
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o, t, rtol=1e-6, atol=1e-6)


# -- bicubic and area resizing --------------------------------------------------------------------


@pytest.mark.parametrize("align,half", [(False, False), (True, False), (False, True)])
@pytest.mark.parametrize("size", [(7, 11), (3, 2), (1, 1)])
def test_resize_bicubic_matches_tf(align, half, size):
    rng = np.random.default_rng(3)
    img = rng.uniform(0, 255, size=(2, 5, 6, 2)).astype(np.float32)
    r = rng.uniform(size=(2,) + size + (2,)).astype(np.float32)

    def program(T):
        x = T.constant(img)
        y = T.image.resize_bicubic(x, size, align_corners=align, half_pixel_centers=half)
        return [y, T.gradients(T.reduce_sum(y * r), x)[0]]
    ours, theirs = run_in_both(program)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5, atol=2e-4)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("size", [(2, 3), (7, 11), (4, 4), (3, 9)])
def test_resize_area_matches_tf(align, size):
    img = np.random.default_rng(4).integers(0, 255, size=(1, 5, 6, 3)).astype(np.uint8)

    def program(T):
        return [T.image.resize_area(img, size, align_corners=align),
                T.image.resize_images(img.astype(np.float32), size, method=T.image.ResizeMethod.AREA),
                T.image.resize_images(img.astype(np.float32), size, method=T.image.ResizeMethod.BICUBIC)]
    ours, theirs = run_in_both(program)
    for o, t in zip(ours, theirs):
        assert o.dtype == t.dtype
        np.testing.assert_allclose(o, t, rtol=1e-5, atol=1e-3)


def test_resize_area_by_hand():
    img = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    with tf.Graph().as_default():
        out = _run(tf.image.resize_area(img, [2, 2]))
    np.testing.assert_allclose(out[0, ..., 0], [[2.5, 4.5], [10.5, 12.5]])


def test_resize_bicubic_by_hand():
    # a linear ramp stays linear inside (the cubic kernel reproduces linear functions)
    img = np.tile(np.arange(8, dtype=np.float32)[None, :], (8, 1)).reshape(1, 8, 8, 1)
    with tf.Graph().as_default():
        out = _run(tf.image.resize_bicubic(img, [8, 16], half_pixel_centers=True))
    np.testing.assert_allclose(out[0, 0, 4:12, 0], (np.arange(4, 12) + 0.5) / 2 - 0.5, atol=1e-3)


# -- gradients by finite differences --------------------------------------------------------------


# (the cases live in gradtable_image.py, which test_gradients.py also runs)


@pytest.mark.parametrize("case", gradtable_image.CASES, ids=str)
def test_gradients_by_finite_differences(case):
    check_case(case)


# -- composites -----------------------------------------------------------------------------------


def test_total_variation_and_image_gradients_by_hand():
    img = np.array([[1, 2], [4, 8]], np.float32).reshape(1, 2, 2, 1)
    with tf.Graph().as_default():
        tv, tv3, (dy, dx) = _run([tf.image.total_variation(img), tf.image.total_variation(img[0]),
                                  tf.image.image_gradients(img)])
    assert tv.tolist() == [3 + 6 + 1 + 4] and tv3 == 14
    np.testing.assert_array_equal(dy[0, ..., 0], [[3, 6], [0, 0]])
    np.testing.assert_array_equal(dx[0, ..., 0], [[1, 0], [4, 0]])


def test_psnr_by_hand():
    a = np.zeros((1, 2, 2, 1), np.float32)
    b = np.full((1, 2, 2, 1), 0.1, np.float32)
    with tf.Graph().as_default():
        p = _run(tf.image.psnr(a, b, 1.0))
    np.testing.assert_allclose(p, [20.0], rtol=1e-5)


def test_composites_match_tf():
    rng = np.random.default_rng(5)
    a = rng.uniform(size=(2, 16, 17, 3)).astype(np.float32)
    b = np.clip(a + rng.normal(0, 0.1, size=a.shape), 0, 1).astype(np.float32)
    big = rng.uniform(size=(1, 50, 52, 3)).astype(np.float32)
    big2 = np.clip(big + rng.normal(0, 0.1, size=big.shape), 0, 1).astype(np.float32)
    u8a, u8b = (a * 255).astype(np.uint8), (b * 255).astype(np.uint8)

    def program(T):
        im = T.image
        a, b, big, big2, u8a, u8b = (T.constant(v) for v in (a_, b_, big_, big2_, u8a_, u8b_))
        return [im.total_variation(a), im.total_variation(a[0]), im.psnr(a, b, 1.0), im.psnr(u8a, u8b, 255),
                im.ssim(a, b, 1.0), im.ssim(u8a, u8b, 255), im.ssim(a, b, 1.0, filter_size=5, filter_sigma=0.8),
                im.ssim_multiscale(big, big2, 1.0, power_factors=(0.2, 0.3, 0.5), filter_size=5),
                im.sobel_edges(a), *im.image_gradients(a), im.rgb_to_yuv(a), im.yuv_to_rgb(a), im.rgb_to_yiq(a),
                im.yiq_to_rgb(a), im.adjust_gamma(a, 2.2, 0.9), im.adjust_gamma(u8a, 0.5),
                im.resize_with_crop_or_pad(a, 10, 20),
                im.extract_image_patches(a, [1, 3, 3, 1], [1, 2, 2, 1], [1, 1, 1, 1], "VALID")]
    a_, b_, big_, big2_, u8a_, u8b_ = a, b, big, big2, u8a, u8b
    ours, theirs = run_in_both(program)
    for i, (o, t) in enumerate(zip(ours, theirs)):
        assert o.dtype == t.dtype and o.shape == t.shape, i
        np.testing.assert_allclose(o, t, rtol=2e-5, atol=2e-5, err_msg=str(i))


def test_composite_gradients_match_tf():
    rng = np.random.default_rng(6)
    a = rng.uniform(size=(1, 12, 12, 2)).astype(np.float32)
    b = rng.uniform(size=(1, 12, 12, 2)).astype(np.float32)

    def program(T):
        x = T.constant(a)
        loss = (T.reduce_sum(T.image.ssim(x, b, 1.0, filter_size=5)) + T.reduce_sum(T.image.total_variation(x))
                + T.reduce_sum(T.image.sobel_edges(x) ** 2) + T.reduce_sum(T.image.rgb_to_yuv(
                    T.concat([x, x[..., :1]], -1)) ** 2))
        return T.gradients(loss, x)
    ours, theirs = run_in_both(program)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("q,pad,clip", [(1, False, True), (3, True, False), (3, False, True)])
def test_combined_non_max_suppression_matches_tf(q, pad, clip):
    rng = np.random.default_rng(7)
    corners = rng.uniform(-0.1, 0.9, size=(2, 30, q, 2)).astype(np.float32)
    boxes = np.concatenate([corners, corners + rng.uniform(0.1, 0.4, size=(2, 30, q, 2)).astype(np.float32)], -1)
    scores = rng.uniform(size=(2, 30, 3)).astype(np.float32)

    def program(T):
        return list(T.image.combined_non_max_suppression(T.constant(boxes), T.constant(scores), 4, 10, 0.4, 0.2,
                                                         pad_per_class=pad, clip_boxes=clip))
    ours, theirs = run_in_both(program)
    for o, t in zip(ours, theirs):
        assert o.dtype == t.dtype and o.shape == t.shape
        np.testing.assert_allclose(o, t, rtol=1e-6, atol=1e-6)


def test_combined_non_max_suppression_by_hand():
    boxes = _BOXES[None, :, None, :]
    scores = np.stack([_SCORES, _SCORES[::-1]], -1)[None]
    with tf.Graph().as_default():
        b, s, c, v = _run(tf.image.combined_non_max_suppression(boxes, scores, 2, 3, 0.5, clip_boxes=False))
    # class 0 keeps boxes 3, 0 (0.95, 0.9); class 1 (scores reversed) keeps boxes 2, 5 (0.95, 0.9)
    assert v.tolist() == [3]
    np.testing.assert_allclose(s[0], [0.95, 0.95, 0.9])
    np.testing.assert_array_equal(c[0], [0, 1, 0])
    np.testing.assert_allclose(b[0], _BOXES[[3, 2, 0]])


# -- extract_glimpse ------------------------------------------------------------------------------


@pytest.mark.parametrize("centered,normalized,offs", [
    (True, True, [[0, 0], [0.2, -0.4]]), (False, True, [[0.2, 0.4], [0.5, 0.55]]),
    (False, False, [[2, 3], [2.7, 3.6]]), (True, False, [[2, 3], [-2.7, -3.6]])])
def test_extract_glimpse_inside_matches_tf(centered, normalized, offs):
    img = np.arange(2 * 10 * 12 * 2, dtype=np.float32).reshape(2, 10, 12, 2)

    def program(T):
        return T.image.extract_glimpse(T.constant(img), [3, 4], np.asarray(offs, np.float32), centered=centered,
                                       normalized=normalized)
    ours, theirs = run_in_both(program)
    np.testing.assert_array_equal(ours, theirs)


def test_extract_glimpse_partly_outside():
    img = np.arange(10 * 12, dtype=np.float32).reshape(1, 10, 12, 1)
    with tf.Graph().as_default():
        g = _run(tf.image.extract_glimpse(img, [3, 4], np.array([[9, 11]], np.float32), centered=False,
                                          normalized=False))[0, ..., 0]
    # corner at (int(9 - 1.5), int(11 - 2)) = (7, 9): 3 columns inside, 1 of noise in [0, 119]
    np.testing.assert_array_equal(g[:, :3], img[0, 7:10, 9:12, 0])
    assert np.all((g[:, 3] >= 0) & (g[:, 3] <= 119))
    with tf.Graph().as_default():
        g = _run(tf.image.extract_glimpse(img, [3, 4], np.array([[0, 0]], np.float32), centered=False,
                                          normalized=False))[0, ..., 0]
    np.testing.assert_array_equal(g[1:, 2:], img[0, :2, :2, 0])   # the corner (-1, -2) truncated toward 0


def test_errors():
    with tf.Graph().as_default():
        img = np.zeros((1, 4, 4, 1), np.float32)
        for bad in (tf.image.crop_and_resize(img, [[0, 0, 1, 1]], [1], [2, 2]),
                    tf.image.non_max_suppression(_BOXES, _SCORES, 3, iou_threshold=1.5),
                    tf.image.sample_distorted_bounding_box([4, 4, 1], [[[0.1, 0.1, 1.2, 0.5]]], seed=1)[0]):
            with pytest.raises(tf.errors.InvalidArgumentError):
                _run(bad)
        with pytest.raises(ValueError, match="4-D"):
            tf.image.resize_bicubic(np.zeros((4, 4, 1), np.float32), [2, 2])
        with pytest.raises(tf.errors.InvalidArgumentError, match="half_pixel_centers"):
            tf.image.resize_bicubic(img, [2, 2], align_corners=True, half_pixel_centers=True)
        with pytest.raises(ValueError, match="non-negative"):
            tf.image.adjust_gamma(img, -1.0)
