#version 450
// The cube: 36 vertices made from gl_VertexIndex (no vertex buffer), turned
// by `angle`, seen through a perspective camera (Vulkan clip space: y down,
// depth 0..1).
layout(push_constant) uniform Params {
	float angle;  // radians
	float aspect; // width / height
	float stamp;  // the frame's stamp, 1..254 (stamp.frag)
	float work;   // fragment shader iterations (cube.frag)
} pc;

layout(location = 0) out vec3 v_normal; // world space
layout(location = 1) out vec2 v_uv;     // -1..1 on the face
layout(location = 2) out vec3 v_color;
layout(location = 3) out vec3 v_pos;    // world space

const vec3 normals[6] = vec3[](vec3(1, 0, 0), vec3(-1, 0, 0), vec3(0, 1, 0),
			       vec3(0, -1, 0), vec3(0, 0, 1), vec3(0, 0, -1));
const vec3 colors[6] = vec3[](vec3(0.95, 0.30, 0.25), vec3(0.25, 0.80, 0.35),
			      vec3(0.30, 0.45, 0.95), vec3(0.95, 0.80, 0.25),
			      vec3(0.80, 0.35, 0.90), vec3(0.25, 0.85, 0.90));
const vec2 corners[6] = vec2[](vec2(-1, -1), vec2(1, -1), vec2(1, 1),
			       vec2(-1, -1), vec2(1, 1), vec2(-1, 1));

mat3 rot_x(float a) { float c = cos(a), s = sin(a); return mat3(1, 0, 0, 0, c, s, 0, -s, c); }
mat3 rot_y(float a) { float c = cos(a), s = sin(a); return mat3(c, 0, -s, 0, 1, 0, s, 0, c); }

void main()
{
	int face = gl_VertexIndex / 6;
	vec2 c = corners[gl_VertexIndex % 6];
	vec3 n = normals[face];
	// A tangent frame with cross(u, v) == n, so every face is counter-clockwise.
	vec3 u = n.zxy;
	vec3 v = abs(n).yzx;
	vec3 p = n + c.x * u + c.y * v;

	mat3 model = rot_y(0.6 + pc.angle) * rot_x(0.45 + pc.angle * 0.7);
	vec3 world = model * (p * 0.9);
	v_normal = model * n;
	v_uv = c;
	v_color = colors[face];
	v_pos = world;

	// Camera at (0, 0, 4) looking at the origin; 40° vertical field of view.
	vec3 view = world - vec3(0, 0, 4);
	float f = 1.0 / tan(radians(20.0));
	float near = 0.5, far = 10.0;
	gl_Position = vec4(view.x * f / pc.aspect, -view.y * f,
			   view.z * far / (near - far) + far * near / (near - far), -view.z);
}
