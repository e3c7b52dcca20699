#version 450
// A lit face with a Julia-set pattern. `work` iterations per fragment make
// the frame as heavy as the demo needs (the race without the bridge must be
// easy to hit). Alpha is 0: the stamp pass writes it last.
layout(push_constant) uniform Params {
	float angle;
	float aspect;
	float stamp;
	float work;
} pc;

layout(location = 0) in vec3 v_normal;
layout(location = 1) in vec2 v_uv;
layout(location = 2) in vec3 v_color;
layout(location = 3) in vec3 v_pos;
layout(location = 0) out vec4 o_color;

void main()
{
	vec2 z = v_uv * 1.5;
	vec2 c = vec2(-0.75 + 0.08 * sin(pc.angle * 2.0), 0.16 + 0.05 * cos(pc.angle * 3.0));
	float glow = 0.0;
	int iters = int(pc.work);
	for (int i = 0; i < iters; i++) {
		z = clamp(vec2(z.x * z.x - z.y * z.y, 2.0 * z.x * z.y) + c, -4.0, 4.0);
		glow += exp(-4.0 * dot(z, z));
	}
	float pattern = iters > 0 ? clamp(glow / float(iters) * 6.0, 0.0, 1.0) : 0.5;
	vec3 base = mix(v_color * 0.25, v_color, pattern);
	// A light frame around each face, like vkcube's texture border.
	float edge = max(abs(v_uv.x), abs(v_uv.y));
	base = mix(base, vec3(0.95), smoothstep(0.90, 0.94, edge));

	vec3 n = normalize(v_normal);
	vec3 l = normalize(vec3(0.5, 0.8, 0.9));
	vec3 e = normalize(vec3(0.0, 0.0, 4.0) - v_pos);
	float diffuse = max(dot(n, l), 0.0);
	float specular = pow(max(dot(reflect(-l, n), e), 0.0), 24.0);
	o_color = vec4(base * (0.25 + 0.75 * diffuse) + vec3(0.5 * specular), 0.0);
}
